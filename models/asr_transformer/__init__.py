"""The ASR Transformer (Speech-Transformer; Tensor2Tensor's LibriSpeech recipe) for speech
recognition, on Model Garden's Seq2SeqTransformer: log-mel features in the graph, word error
rate out of it."""
