"""``mode: adaptive``'s policy side: Thompson sampling (``bandit``), the stores of its posteriors
(``store``: SQLite, Redis) and the arm chosen for one exchange (``choice``)."""
