"""The answer score's calibration: the verdict's log-odds mapped to P(hallucinated) per task, on
one scale for every task (:mod:`.probability`)."""
