"""Durable runs: a script's record (every call's start and answer, the clock and entropy it
read), its replay after a crash or a question, and plans: the preview of a script's writes
and the commit of the approved ones. run_code hands a run here when the runtime is durable
(``run_with_plans``). May import: contract to session."""
