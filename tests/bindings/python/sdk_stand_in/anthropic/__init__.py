# A stand-in for the Anthropic Python SDK, for memtool's binding tests: the SDK
# itself cannot be installed on the test machines (no PyPI access). Only the
# names the binding builds on are here (see lib/tools/__init__.py).
