"""The examples and notes under each command's ``--help``.

They name the docs site's pages by title, never a repository path: a user with only the wheel
has the site, not the checkout.
"""

from __future__ import annotations

__all__ = [
    "COMPACT_EPILOG",
    "COUNT_EPILOG",
    "EXAMPLE_EPILOG",
    "MAIN_EPILOG",
    "REPLAY_EPILOG",
    "SESSION_EPILOG",
    "FORMATS_EPILOG",
    "STRATEGIES_EPILOG",
]

MAIN_EPILOG = """\
run 'compaction COMMAND --help' for a command's options and an example, e.g.
  compaction example                  # writes the bundled example, agent_session.json
  compaction compact agent_session.json --target 4000
The guides ("The command line", "What a compaction costs", ...) are on the documentation site.
"""

EXAMPLE_EPILOG = """\
examples:
  compaction example                   # agent_session.json, here
  compaction example -o run.json       # under another name ('-': stdout)
  compaction example --path            # where the installed copy is

An existing file is never overwritten unless it already holds the example.
"""

COMPACT_EPILOG = """\
examples:
  compaction compact run.json --target 4000 -o small.json
  compaction compact run.traj.json --window 128000 --ratio 0.4 --to anthropic -o run.json
  compaction compact logs/ --target 20000 -o compacted/     # every transcript in logs/
  compaction compact logs/ --target 20000 -o compacted/ -j 4   # ... 4 files at a time
  cat run.json | compaction compact - --target 4000 -o -   # stdin to stdout
  compaction compact run.json --target 4000 --dry-run --json # the report only

What is written: OpenAI chat messages or an Anthropic request (--to picks one). OpenAI and
Anthropic inputs come back in their own shape (a list, a {"messages": ...} object, or JSONL).
Agent logs are read, never written back: mini-swe-agent and SWE-agent trajectories become
OpenAI messages, Claude Code sessions an Anthropic request, each one JSON document; a name
that says otherwise (x.traj.json, x.traj, a .jsonl for one JSON document) is refused, and
with -o DIR their results are named .json.

The report (tokens before/after, tokens saved and time per strategy) goes to stderr; the
conversation to -o or stdout. Exit 0: done; 1: the target was not reached (the best result is
still written); 2: bad usage or bad input (nothing is written).
"""

COUNT_EPILOG = """\
examples:
  compaction count run.json
  compaction count session.jsonl --counter approx --top 5
  compaction count logs/ --json
"""

REPLAY_EPILOG = """\
examples:
  compaction replay run.traj.json --window 32000
  compaction replay run.json --window 16000 --compact-at 0.7 --compact-to 0.4 --plot calls.png
  compaction replay session.jsonl --window 100000 --price claude-sonnet-4-5 --ttl 3600

Each model call is replayed through the trigger (compact at --compact-at of the window, down
to --compact-to), and its tokens sent, compactions and prefix-cache share are shown. With
--price, every call is also priced with the provider's prompt cache (reads, writes, uncached
input, output, USD), beside the same run with no compaction; the model behind the figures
is in "What a compaction costs" on the documentation site.
"""

FORMATS_EPILOG = """\
examples:
  compaction formats
  compaction formats ~/.codex/sessions/2026/01/05/rollout-*.jsonl
  compaction count trajectory.json --format openai-log
"""

STRATEGIES_EPILOG = """\
examples:
  compaction strategies
  compaction strategies --json
"""

SESSION_EPILOG = """\
examples:
  compaction session list
  compaction session show my-agent
  compaction session export my-agent my-agent.json
  compaction session import my-agent.json restored
  compaction session clear my-agent       # empty the history, keep context and state
  compaction session delete my-agent

The store is --store (a directory, file:///dir or postgresql://user@host/db), else
$COMPACTION_SESSIONS_URL, else $COMPACTION_SESSIONS_DIR, else the default location.
"""
