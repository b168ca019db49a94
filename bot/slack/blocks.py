"""Block Kit builders: pure functions from the core's result models to lists of blocks.

No I/O here. Every string that did not come from this module goes through
``formatting.escape``/``link``/``markdown_to_mrkdwn``. Builders return the *body* blocks;
callers paginate them (``formatting.paginate``) and add the feedback buttons as footer.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.slack import payloads
from bot.slack.formatting import (
    BUTTON_TEXT_LIMIT,
    Block,
    bold,
    context,
    divider,
    escape,
    header,
    link,
    markdown_to_mrkdwn,
    mention,
    mrkdwn,
    plain_text,
    sections,
)
from retrieval.results import (
    AmbiguousScholarResult,
    AnswerResult,
    Citation,
    CollaboratorsResult,
    ScholarCandidate,
    ScholarSummaryResult,
    SearchFilters,
    SearchResult,
)

OPEN_ACCESS_BADGE = ":unlock: open access"
WORKING_TEXT = ":hourglass_flowing_sand: Working on it…"

HELP_TEXT = (
    "*Ask me about the indexed papers.* Mention me in a channel (I answer in the thread; "
    "reply in that thread to follow up, no need to tag me again), send me a direct message, "
    "or use `/paperbot`:\n"
    "• `/paperbot <question>` or `/paperbot ask <question>`: a cited answer\n"
    "• `/paperbot summarize <scholar> [--since YEAR]`: profile, themes and recent work "
    "(a name, an ORCID, or the `person:…` id of exactly one person)\n"
    "• `/paperbot collaborators <topic> [--for NAME] [--new]`: who works on it, with evidence "
    "(NAME may be a `person:…` id too)\n"
    "• `/paperbot follow [scholar|topic] <name or topic>`: post new matching papers here\n"
    "• `/paperbot unfollow <number or name>` and `/paperbot follows`: manage this channel's follows\n"
    "• `/paperbot sync`: fetch what is new for every roster scholar now, with its progress here "
    "(for the people the operator allows)\n"
    "• `/paperbot help`: this message"
)


# --- paper records ---------------------------------------------------------------------------


def citation_url(citation: Citation) -> str | None:
    """Where the title links: DOI, else the arXiv abstract page, else the record's URL."""
    if citation.doi:
        return f"https://doi.org/{citation.doi}"
    if citation.arxiv_id:
        return f"https://arxiv.org/abs/{citation.arxiv_id}"
    return citation.url


def citation_line(citation: Citation, *, label: str | None = None) -> str:
    """``*[n]* <link|Title>`` then authors · venue · year · open-access badge."""
    number = label if label is not None else f"[{citation.n}]"
    title = link(citation_url(citation), citation.title)
    facts = [escape(citation.byline())]
    if citation.venue:
        facts.append(f"_{escape(citation.venue).replace('_', ' ')}_")
    if citation.year:
        facts.append(str(citation.year))
    if citation.open_access:
        facts.append(OPEN_ACCESS_BADGE)
    return f"*{escape(number)}* {title}\n" + " · ".join(facts)


def sources_blocks(citations: Sequence[Citation], *, title: str = "Sources") -> list[Block]:
    if not citations:
        return []
    lines = "\n\n".join(citation_line(citation) for citation in citations)
    return [*sections(bold(title)), *sections(lines)]


# --- answers ---------------------------------------------------------------------------------


def answer_blocks(result: AnswerResult, *, asked_by: str | None = None) -> list[Block]:
    """The answer text, the filters it applied, its notices, then the numbered sources."""
    blocks: list[Block] = [asked_context(asked_by, result.question)] if asked_by else []
    blocks.extend(sections(markdown_to_mrkdwn(result.answer) or "_(empty answer)_"))
    notes: list[str] = []
    if result.filters:
        described = SearchFilters.model_validate(result.filters).wording()
        if result.kind == "listing" and not result.abstained:
            notes.append(f":mag: Listing every indexed paper {escape(described)}")
        else:
            notes.append(f":mag: Filters applied: {escape(described)}")
    if result.notice:
        notes.append(f":information_source: {escape(result.notice)}")
    if not result.citations:
        notes.append(":warning: No indexed paper is cited for this answer; treat it with care.")
    elif result.abstained:
        notes.append(":grey_question: The indexed papers do not answer this confidently.")
    blocks.extend(context(note) for note in notes)
    blocks.extend(sources_blocks(result.citations))
    return blocks


def asked_context(user: str | None, question: str) -> Block:
    """"<@U…> asked: …" above replies to slash commands (nobody sees the command itself)."""
    who = mention(user) or "Someone"
    return context(f"{who} asked: {escape(question)}")


def working_blocks(status: str) -> list[Block]:
    """The progress message while the answer waits (``Progress``: e.g. the model reading the
    records), in place of the bare "Working on it…"."""
    return sections(f":hourglass_flowing_sand: {escape(status)}")


def partial_answer_blocks(text: str) -> list[Block]:
    """What a streaming answer shows while tokens arrive (the first ~2,900 characters)."""
    shown = markdown_to_mrkdwn(text)
    pieces = sections(shown)
    blocks = pieces[:1] if pieces else []
    blocks.append(context(":hourglass_flowing_sand: _writing…_"))
    return blocks


def answer_actions(answer_id: str, *, has_citations: bool, more_offset: int | None = 0) -> Block:
    """Thumbs up/down, "More papers" (unless ``more_offset`` is None) and, with citations, "BibTeX"."""
    ref = payloads.AnswerRef(answer_id=answer_id)
    elements = [
        _button(":thumbsup:", payloads.ACTION_VOTE_UP, ref.encode()),
        _button(":thumbsdown:", payloads.ACTION_VOTE_DOWN, ref.encode()),
    ]
    if more_offset is not None:
        more = payloads.AnswerRef(answer_id=answer_id, offset=more_offset)
        elements.append(_button("More papers", payloads.ACTION_MORE_PAPERS, more.encode()))
    if has_citations:
        elements.append(_button("BibTeX", payloads.ACTION_BIBTEX, ref.encode()))
    return {"type": "actions", "block_id": f"paperbot_answer_{answer_id}", "elements": elements}


def more_papers_actions(answer_id: str, offset: int) -> Block:
    """The "More papers" button under a page of further papers (next page at ``offset``)."""
    more = payloads.AnswerRef(answer_id=answer_id, offset=offset)
    return {"type": "actions", "elements": [_button("More papers", payloads.ACTION_MORE_PAPERS, more.encode())]}


def _button(text: str, action_id: str, value: str) -> dict[str, object]:
    return {"type": "button", "text": plain_text(text, BUTTON_TEXT_LIMIT), "action_id": action_id, "value": value}


def more_papers_blocks(result: SearchResult, *, skipped: int = 0) -> list[Block]:
    """A page of further records for "More papers", numbered by their rank in the search."""
    if not result.results:
        note = "No further papers match this question."
        if result.notice:
            note += f" {result.notice}"
        return [context(escape(note))]
    lines = "\n\n".join(
        citation_line(citation, label=f"{citation.n}.") for citation in result.results
    )
    blocks = [*sections(f"*More papers for* {escape(result.query)}"), *sections(lines)]
    if skipped:
        blocks.append(context(f"{skipped} record(s) already cited above are not repeated."))
    if result.notice:
        blocks.append(context(f":information_source: {escape(result.notice)}"))
    return blocks


# --- scholars --------------------------------------------------------------------------------

_ID_LINKS = {
    "orcid": ("ORCID", "https://orcid.org/{}"),
    "openalex": ("OpenAlex", "https://openalex.org/{}"),
}


def summary_blocks(result: ScholarSummaryResult, *, since: int | None = None) -> list[Block]:
    """Profile facts, other people of the same name (one pick button each), the summary,
    themes with citations, and the cited papers. ``since`` rides along on the pick buttons."""
    scholar = result.scholar
    blocks: list[Block] = [header(scholar.name)]
    facts: list[str] = []
    current = scholar.affiliations.get("current") or []
    previous = scholar.affiliations.get("previous") or []
    if current:
        facts.append("*Affiliation:* " + escape("; ".join(current)))
    if previous:
        facts.append("*Previously:* " + escape("; ".join(previous)))
    ids = [
        link(template.format(scholar.ids[key]), f"{label} {scholar.ids[key]}")
        for key, (label, template) in _ID_LINKS.items()
        if scholar.ids.get(key)
    ]
    if result.person_id:
        ids.append(f"`{escape(result.person_id)}`")
    if ids:
        facts.append("*Ids:* " + " · ".join(ids))
    if result.paper_count:
        facts.append(f"*Indexed papers:* {result.paper_count}")
    if result.counts_by_year:
        years = sorted(result.counts_by_year.items())
        facts.append("*By year:* " + ", ".join(f"{year}: {count}" for year, count in years))
    if result.topics:
        facts.append("*Topics:* " + escape(", ".join(result.topics)))
    if result.coauthors:
        people = ", ".join(f"{c.name} ({c.shared})" for c in result.coauthors[:8])
        total = f" of {result.coauthor_count}" if result.coauthor_count > len(result.coauthors[:8]) else ""
        facts.append(f"*Frequent co-authors{total}:* " + escape(people))
    if facts:
        blocks.extend(sections("\n".join(facts)))
    blocks.extend(namesake_blocks(result, since=since))
    blocks.append(divider())
    blocks.extend(sections(markdown_to_mrkdwn(result.summary) or "_(no summary)_"))
    if result.themes:
        lines = [
            f"• {escape(theme.label)} " + "".join(f"[{n}]" for n in theme.citations)
            for theme in result.themes
        ]
        blocks.extend(sections("*Themes*\n" + "\n".join(lines)))
    if result.window_note:
        blocks.append(context(f":calendar: {escape(result.window_note)}"))
    if result.notice:
        blocks.append(context(f":information_source: {escape(result.notice)}"))
    elif result.mode == "extractive":
        blocks.append(context(":information_source: Summary assembled from the records (no language model)."))
    blocks.extend(sources_blocks(result.papers, title="Papers"))
    return blocks


def ambiguous_blocks(result: AmbiguousScholarResult, *, since: int | None = None) -> list[Block]:
    """Several people match the name: one line and one "Summarize" button per candidate, each
    picking exactly that person (by ``person_id``; older results: an id or a unique name)."""
    blocks: list[Block] = sections(
        f"Several indexed scholars match {bold(result.query)}. Which one did you mean?"
    )
    names = [candidate.name.casefold() for candidate in result.candidates]
    for candidate in result.candidates[:20]:
        facts = [bold(candidate.name)]
        if candidate.affiliation:
            facts.append(escape(candidate.affiliation))
        facts.append(f"{candidate.papers} paper(s)")
        if candidate.latest_year:
            facts.append(f"latest {candidate.latest_year}")
        text = " · ".join(facts)
        if candidate.coauthors:
            text += "\nWith " + escape(", ".join(candidate.coauthors[:5]))
        if candidate.sample_title:
            text += f"\n_e.g._ {escape(candidate.sample_title)}"
        block: Block = {"type": "section", "text": mrkdwn(text[:3000])}
        unique = names.count(candidate.name.casefold()) == 1
        pick = payloads.ScholarPick.for_person(
            candidate.person_id, fallback=_candidate_reference(candidate.name, candidate.ids, unique=unique), since=since,
        )
        if pick is not None:
            block["accessory"] = _button("Summarize", payloads.ACTION_PICK_SCHOLAR, pick.encode())
        blocks.append(block)
    hidden = max(0, len(result.candidates) - 20) + result.more
    if hidden:
        blocks.append(context(f"…and {hidden} more; add a first name or initial to narrow it down."))
    return blocks


def _candidate_reference(name: str, ids: dict[str, str], *, unique: bool) -> str | None:
    """What ``summarize`` resolves to exactly this candidate: an ORCID or OpenAlex author id,
    else the written name when no other candidate shares it (None: no button can single them out)."""
    for key in ("orcid", "openalex"):
        if ids.get(key):
            return ids[key]
    return name if unique else None


def namesake_blocks(result: ScholarSummaryResult, *, since: int | None = None) -> list[Block]:
    """"N other people in the index are also named X" and a pick button per listed namesake,
    labelled with the name and a fact that tells that namesake apart."""
    others = result.others_with_this_name
    if others <= 0:
        return []
    main = _summary_facts(result)
    listed = result.namesakes[:5]
    buttons: list[dict[str, object]] = []
    for candidate in listed:
        pick = payloads.ScholarPick.for_person(
            candidate.person_id, fallback=_candidate_reference(candidate.name, candidate.ids, unique=False), since=since,
        )
        if pick is None:
            continue
        rivals = [main, *(_candidate_facts(c) for c in listed if c is not candidate)]
        fact = distinguishing_fact(_candidate_facts(candidate), rivals)
        label = f"{candidate.name} · {fact}" if fact else candidate.name
        buttons.append(_button(label, payloads.pick_action(len(buttons)), pick.encode()))
    name = result.scholar.name
    people = "1 other person in the index is" if others == 1 else f"{others} other people in the index are"
    if all(c.name.casefold() == name.casefold() for c in result.namesakes):
        line = f":busts_in_silhouette: {people} also named {bold(name)}."
    else:
        line = f":busts_in_silhouette: {people} also matched by this name."
    line += " This summary is only about the one above" + (": pick another below." if buttons else ".")
    blocks: list[Block] = [context(line)]
    if buttons:
        blocks.append({"type": "actions", "block_id": "paperbot_namesakes", "elements": buttons})
    return blocks


def _candidate_facts(candidate: ScholarCandidate) -> list[str]:
    """What can tell a person apart, most telling first."""
    facts = [candidate.affiliation or ""]
    if candidate.latest_year:
        facts.append(f"latest {candidate.latest_year}")
    facts += [f"with {name}" for name in candidate.coauthors[:3]]
    facts.append(f"{candidate.papers} paper" + ("" if candidate.papers == 1 else "s"))
    return [fact for fact in facts if fact]


def _summary_facts(result: ScholarSummaryResult) -> list[str]:
    current = result.scholar.affiliations.get("current") or []
    facts = list(current)
    if result.counts_by_year:
        facts.append(f"latest {max(result.counts_by_year)}")
    facts += [f"with {c.name}" for c in result.coauthors]
    facts.append(f"{result.paper_count} paper" + ("" if result.paper_count == 1 else "s"))
    return facts


def distinguishing_fact(facts: Sequence[str], rivals: Sequence[Sequence[str]]) -> str | None:
    """The first of ``facts`` no rival shares (else the first fact; None without facts)."""
    taken = {fact.casefold() for rival in rivals for fact in rival}
    return next((fact for fact in facts if fact.casefold() not in taken), facts[0] if facts else None)


# --- collaborators ---------------------------------------------------------------------------


def collaborators_blocks(result: CollaboratorsResult, *, for_name: str | None = None) -> list[Block]:
    """Each person with the reason, the papers that justify the ranking and, when the person has
    an id, a "Profile" button that summarizes exactly them."""
    title = f"People working on {bold(result.topic)}"
    if for_name:
        title += f" (possible collaborators for {escape(for_name)})"
    blocks: list[Block] = sections(title)
    if result.notice:
        blocks.append(context(f":information_source: {escape(result.notice)}"))
    if not result.scholars:
        blocks.append(context("No indexed scholar has papers on this topic yet."))
        return blocks
    for rank, person in enumerate(result.scholars, start=1):
        lines = [f"*{rank}. {escape(person.name).replace('*', '')}*"
                 + (f" · {escape(person.affiliation)}" if person.affiliation else "")]
        if person.reason:
            lines.append(markdown_to_mrkdwn(person.reason))
        lines.extend(
            citation_line(paper, label=f"{rank}.{i}") for i, paper in enumerate(person.papers, start=1)
        )
        pieces = sections("\n".join(lines))
        pick = payloads.ScholarPick.for_person(person.person_id)
        if pick is not None:  # the first piece holds the name: the button sits next to it
            pieces[0]["accessory"] = _button("Profile", payloads.ACTION_PICK_SCHOLAR, pick.encode())
        blocks.extend(pieces)
    return blocks


# --- follows, help, status -------------------------------------------------------------------


def follow_alert_blocks(kind: str, query: str, citations: Sequence[Citation]) -> list[Block]:
    """New papers matching a follow (``kind`` scholar/topic, the followed ``query``) of this channel."""
    noun = "paper" if len(citations) == 1 else "papers"
    blocks: list[Block] = sections(f":bell: New {noun} matching {escape(kind)} {bold(query)}")
    lines = "\n\n".join(citation_line(citation, label="•") for citation in citations)
    blocks.extend(sections(lines))
    return blocks


def help_blocks() -> list[Block]:
    return sections(HELP_TEXT)


def queued_text(position: int) -> str:
    return (
        f":hourglass: You're in position {position}. I'll answer here as soon as it's your turn "
        "(nothing is dropped)."
    )


def apology_text(reference: str) -> str:
    return (
        f":warning: Sorry, something went wrong on my side (reference `{escape(reference)}`). "
        "Please try again; if it keeps happening, give this reference to whoever runs paperbot."
    )


def error_text(message: str, hint: str | None = None) -> str:
    """A deliberate error (``PaperbotError.user_message`` and hint), escaped."""
    text = f":warning: {escape(message)}"
    if hint:
        text += f"\n{escape(hint)}"
    return text
