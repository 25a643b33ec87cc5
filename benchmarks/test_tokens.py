"""Generative models' tokens: prefill tokens/s and time to first token against prompt
length, decode tokens/s and time per output token against batch size and context; tokens
under LoadGen."""


def test_prefill(benchmark, token_prefill):
    token_prefill(benchmark)


def test_decode(benchmark, token_decode):
    token_decode(benchmark)


def test_token_serving(token_serving):
    token_serving()
