"""The Transformer (Vaswani et al. 2017) for translation, on Model Garden's Seq2SeqTransformer,
with SentencePiece tokenisation in the graph and sacreBLEU evaluation."""
