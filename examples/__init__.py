"""Examples of embedding codeact, each exercised by the test suite."""
