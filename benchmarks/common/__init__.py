"""What every suite shares: the real transcripts (data), timing (measure), the ladders timed
(ladders), synthetic conversations, LangChain's contenders (peers), Markdown tables (report) and
RESULTS.md blocks (results_file). It imports the library and nothing else of ``benchmarks``.
"""
