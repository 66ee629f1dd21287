"""Stand-in for Matcha-TTS: the fake CosyVoice needs nothing from it; its presence is what is checked."""
