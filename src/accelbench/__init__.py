"""accelbench: a pytest-benchmark suite for training and inference speed, accuracy and memory."""
