"""DeepLab v3 and v3+ (Chen et al. 2017, 2018): semantic segmentation with atrous backbones,
ASPP and a stride-4 decoder, on Model Garden's modeling code."""
