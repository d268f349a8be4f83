"""Names the registry validates against and the labels tables print, without importing torch.

`timerepro.encoders` registers one class per key of ENCODER_LABELS and refuses any other name.
"""

ENCODER_LABELS = {
    "linear": "Linear",
    "cosine": "Sinusoidal",
    "sine_cosine": "Sine-cosine",
    "cosine_scale": "Sinusoidal-scale",
    "time2vec": "Time2Vec",
}

STANDIN_SCALES = ("smoke", "offline")  # the scales a labelled synthetic stand-in can be made at

# dyg_mamba (issue 12): GraphMixer's fixed encoder, and "no time information" (dyg_mamba Figure 1's w/o-time arms)
ENCODER_LABELS.update({
    "fixed_cosine": "Fixed sinusoidal",
    "none": "No time information",
})
