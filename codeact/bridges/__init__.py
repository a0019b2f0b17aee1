"""One-line bridges into the agent frameworks users already run.

Each is a module of its own, imported only by those who use it, with the framework as
an optional extra: ``codeact.bridges.openai_agents``, ``codeact.bridges.pydantic_ai``,
``codeact.bridges.langchain`` and ``codeact.bridges.smolagents``.
May import: contract to runtime.
"""
