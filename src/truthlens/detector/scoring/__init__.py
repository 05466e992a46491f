"""Answer-token scores from the models: one model's (:mod:`.token_scorer`), and an ensemble's
members joined onto one tokenization (:mod:`.ensemble`)."""
