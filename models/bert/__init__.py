"""BERT (Devlin et al. 2019): pretraining (masked LM + next sentence) and fine-tuning, on Model
Garden's encoder, with tokenisation in the graph by tensorflow-text."""
