"""A small Django project for tests/test_django.py: the app ``news`` (an ``Article`` model
fingerprinted by simsql, its two migrations) and the settings the tests configure."""
