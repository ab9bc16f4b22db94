"""MobileNet v1, v2, v3-large and v3-small on Model Garden's MobileNet backbone."""
