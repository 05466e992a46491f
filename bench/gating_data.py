"""Hand-written relevance probes for evidence gating: per question, one passage that answers it
and one on the same subject that does not (a hard distractor). Every other question's
passages are easy distractors. Used by the gating benchmarks only."""

from __future__ import annotations

# (question, answering passage, same-subject distractor)
PROBES: tuple[tuple[str, str, str], ...] = (
    (
        "What is the capital of Australia?",
        "Canberra is the capital city of Australia. It was chosen as a compromise between Sydney and Melbourne and "
        "became the seat of government in 1927.",
        "Australia is known for its unique wildlife, including kangaroos, koalas and the platypus, and for the Great "
        "Barrier Reef off the coast of Queensland.",
    ),
    (
        "When was the Eiffel Tower completed?",
        "The Eiffel Tower was completed in March 1889 as the entrance arch to the World's Fair marking the centennial "
        "of the French Revolution.",
        "The Eiffel Tower is repainted roughly every seven years; about sixty tonnes of paint are needed to protect "
        "its wrought iron from rust.",
    ),
    (
        "Who wrote the novel Pride and Prejudice?",
        "Pride and Prejudice is an 1813 novel of manners written by Jane Austen, first published anonymously by "
        "Thomas Egerton.",
        "Pride and Prejudice has been adapted many times for film and television, most famously in the 1995 BBC "
        "series starring Colin Firth.",
    ),
    (
        "What is the boiling point of water at sea level in Celsius?",
        "At standard atmospheric pressure, which corresponds to sea level, pure water boils at 100 degrees Celsius.",
        "Water covers about 71 percent of the Earth's surface, and most of it is salt water held in the oceans.",
    ),
    (
        "How many moons does Mars have?",
        "Mars has two small moons, Phobos and Deimos, both discovered by Asaph Hall in 1877.",
        "Mars is often called the Red Planet because iron oxide on its surface gives it a reddish appearance.",
    ),
    (
        "What is the recommended adult dose of ibuprofen for pain?",
        "For adults, the usual over-the-counter dose of ibuprofen for pain is 200 to 400 mg every four to six hours, "
        "not exceeding 1200 mg a day without medical advice.",
        "Ibuprofen was discovered in the 1960s by a research team at Boots led by Stewart Adams in Nottingham.",
    ),
    (
        "Which company reported the highest cloud revenue growth last quarter?",
        "Last quarter, Northwind Cloud reported the highest cloud revenue growth among the major providers, with "
        "subscriptions up 31 percent year over year.",
        "Northwind opened a new headquarters building with a rooftop garden and a cafeteria that serves employees "
        "three meals a day.",
    ),
    (
        "What is the notice period for terminating the lease?",
        "Either party may terminate this lease by giving the other party at least sixty days' written notice before "
        "the intended termination date.",
        "The tenant shall keep the premises clean and may not keep pets other than fish without the landlord's "
        "written consent.",
    ),
    (
        "Who painted the Mona Lisa?",
        "The Mona Lisa was painted by Leonardo da Vinci between about 1503 and 1519; it hangs in the Louvre in Paris.",
        "The Louvre is the world's most visited museum and was originally built as a fortress in the late twelfth "
        "century.",
    ),
    (
        "What gas do plants absorb during photosynthesis?",
        "During photosynthesis plants take in carbon dioxide from the air and, using light energy, convert it with "
        "water into glucose, releasing oxygen.",
        "Some plants, such as the Venus flytrap, supplement their nutrition by trapping and digesting insects.",
    ),
    (
        "What is the maximum speed of the Model Q train?",
        "The Model Q high-speed train has a certified maximum operating speed of 320 kilometres per hour on dedicated "
        "track.",
        "The Model Q train has a quiet carriage, power sockets at every seat and a bistro car serving hot meals.",
    ),
    (
        "In which year did the Berlin Wall fall?",
        "The Berlin Wall fell on 9 November 1989, when East German authorities opened the border crossings.",
        "The Berlin Wall was about 155 kilometres long and included a death strip guarded by watchtowers.",
    ),
)
