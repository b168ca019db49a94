"""Helpers shared by every test folder (the encoder's on-disk cache, made once per session)."""
