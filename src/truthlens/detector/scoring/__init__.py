"""Answer-token scores from the models: one model's (:mod:`.token_scorer`), an ensemble's
members joined onto one tokenization (:mod:`.ensemble`), and the bounded caches of what a check
derives from its context, so the next answer on it scores only its own rows (:mod:`.memo`)."""
