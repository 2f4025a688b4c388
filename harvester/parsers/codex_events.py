"""Codex CLI's ``event_msg`` records: the UI stream written beside the model-visible history.

Most of them copy what ``response_item`` lines already hold (``user_message``, ``agent_message``,
``*_end``, ``item_completed``...) and are dropped. Kept: turn boundaries and token totals as session
facts; rollbacks, reviews, aborted turns and the turn's errors and warnings as ``system`` notices; each
response's usage (from ``token_count`` before 0.171, from ``token_usage_record`` since: :func:`token_count`).
Names and payloads: ``EventMsg`` and its event structs in ``codex-rs/protocol/src/protocol.rs``; which
of them a rollout holds: ``codex-rs/rollout/src/policy.rs`` (``fixtures/codex/SOURCE.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from harvester.model import Usage

if TYPE_CHECKING:
    from harvester.model import Event, SessionPatch


class _Reader(Protocol):
    """What these handlers use of harvester/parsers/codex.py's reader (named here, not imported from there: that
    module imports this one)."""

    state: dict[str, Any]

    def patch(self) -> SessionPatch: ...
    def event(self, raw: bytes, ts: Any, suffix: int | None = None, **fields: Any) -> Event: ...
    def drift(self, detail: str) -> None: ...

# event_msg types whose content is already in response items, or that only drive the UI.
EVENT_SKIPPED = frozenset({
    "user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content", "item_completed",
    "item_started", "context_compacted", "exec_command_begin", "exec_command_end", "patch_apply_begin",
    "patch_apply_end", "mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin", "web_search_end",
    "image_generation_begin", "image_generation_end", "view_image_tool_call", "thread_settings_applied",
    "thread_goal_updated", "thread_name_updated", "turn_diff", "plan_update", "background_event",
    "deprecation_notice", "sub_agent_activity", "undo_started", "undo_completed", "collab_agent_spawn_begin",
    "collab_agent_spawn_end", "model_reroute", "agent_message_delta", "agent_reasoning_delta",
    "agent_reasoning_section_break", "session_configured",
})

# What went wrong in a turn (ErrorEvent, StreamErrorEvent, WarningEvent): {message, codex_error_info?,
# additional_details?}. Only ``error`` was ever persisted (extended history, 2026-02-12 to 2026-06-01).
NOTICES = {"error": "error", "stream_error": "stream error", "warning": "warning", "guardian_warning": "guardian warning"}
# CodexErrorInfo variants that leave the turn as it was (CodexErrorInfo::affects_turn_status).
TURN_UNAFFECTED = frozenset({"thread_rollback_failed", "active_turn_not_steerable"})


def event_msg(reader: _Reader, payload: dict, raw: bytes, ts: Any) -> None:
    etype = payload.get("type")
    patch = reader.patch()
    if etype == "token_count":
        info = payload.get("info")
        if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
            patch.note(tokens=info["total_token_usage"])
        token_count(reader, info, raw, ts)
    elif etype == "task_started":
        reader.state.pop("turn_failed", None)
        patch.note(last_turn="open")
    elif etype == "task_complete":
        # Codex's replay keeps a turn that had an error failed when it completes (thread_history.rs).
        patch.note(last_turn="failed" if reader.state.pop("turn_failed", False) else "complete")
    elif etype == "turn_aborted":
        patch.note(last_turn="aborted")
        reader.event(raw, ts, role="system", kind="meta", text=f"turn aborted: {payload.get('reason') or '?'}",
                     meta={"event": etype})
    elif etype in NOTICES:
        _notice(reader, etype, payload, raw, ts)
    elif etype == "thread_rolled_back":
        n = payload.get("num_turns")
        reader.event(raw, ts, role="system", kind="meta", text=f"the last {n} turn(s) were rolled back",
                     meta={"event": etype, "num_turns": n})
    elif etype == "entered_review_mode":
        hint = payload.get("user_facing_hint") or ""
        reader.event(raw, ts, role="system", kind="meta", text=f"review started {hint}".strip(),
                     meta={"event": etype})
    elif etype == "exited_review_mode":
        findings = ((payload.get("review_output") or {}).get("findings")) or []
        titles = "; ".join(str(f.get("title")) for f in findings if isinstance(f, dict))
        reader.event(raw, ts, role="system", kind="meta", text=f"review finished: {titles or 'no findings'}",
                     meta={"event": etype})
    elif etype not in EVENT_SKIPPED:
        reader.drift(f"event_msg={etype!r}")
    if etype == "item_completed":
        item = payload.get("item") or {}
        if item.get("type") == "Plan" and item.get("text"):  # a plan has no response item of its own
            reader.event(raw, ts, role="assistant", kind="text", text=str(item["text"]), meta={"plan": True})


def _notice(reader: _Reader, etype: str, payload: dict, raw: bytes, ts: Any) -> None:
    """An error or warning the turn met (a usage limit, a dropped stream being retried, ...)."""
    message = payload.get("message")
    info = payload.get("codex_error_info")  # "usage_limit_exceeded", or {"http_connection_failed": {...}}
    details = payload.get("additional_details")
    meta = {"event": etype, **({"error_info": info} if info else {}),
            **({"details": details} if isinstance(details, str) and details else {})}
    text = f"{NOTICES[etype]}: {message}" if isinstance(message, str) and message else NOTICES[etype]
    reader.event(raw, ts, role="system", kind="meta", text=text, meta=meta)
    kind = next(iter(info)) if isinstance(info, dict) and info else info
    if etype == "error" and kind not in TURN_UNAFFECTED:
        reader.state["turn_failed"] = True
        reader.patch().note(last_turn="failed")


def token_count(reader: _Reader, info: Any, raw: bytes, ts: Any) -> None:
    """A ``token_count`` event: Codex's running total of the thread's usage and the last response's. Before 0.171
    it is the only record of a response's usage: the response's is its ``last_token_usage``, or what the running
    total grew by (early envelopes carry only the total); one that repeats the running total (written again when
    a turn starts, or after a compaction) is no new response. The running total is followed through records
    skipped as a fork's or a subagent's copy of its parent's history, so the first one of its own counts only
    what it added."""
    if not isinstance(info, dict):
        return
    total, last = counts(info.get("total_token_usage")), counts(info.get("last_token_usage"))
    previous = reader.state.get("codex_total")
    if total is not None:
        reader.state["codex_total"] = total
    if reader.state.get("exact_usage") or (total is not None and total == previous):
        return
    if last is None and total is not None:
        last = {k: max(v - (previous or {}).get(k, 0), 0) for k, v in total.items()}
    if last is None or not any(last.values()):
        return
    key = ":".join(str(last[k]) for k in COUNT_KEYS)
    give_usage(reader, usage_of(last, f"token_count:{ts}:{key}"), raw, ts)


def give_usage(reader: _Reader, usage: Usage, raw: bytes, ts: Any) -> None:
    """Put a response's usage on its last event (the response's own, read in this same call), or, when that
    event came in an earlier read (a live rollout is read as it grows), on a folded notice of its own at the
    usage's time. (The early envelopes, 0.44, wrote a response's token_count before its items: its usage then
    sits on the previous response's last event, seconds earlier; the totals are the same.)"""
    holder = reader.last_assistant
    if holder is not None and holder.usage is None:
        holder.usage = usage
        holder.model = holder.model or reader.state.get("model")
    else:
        reader.event(raw, ts, role="system", kind="meta", text="token usage of the last response", usage=usage,
                     model=reader.state.get("model"), meta={"event": "token_count"})
    reader.last_assistant = None


COUNT_KEYS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens",
               "reasoning_output_tokens")


def counts(raw: Any) -> dict[str, int] | None:
    """Codex's token counts (``input_tokens`` includes the cached ones), as ints."""
    if not isinstance(raw, dict):
        return None
    return {k: int(raw.get(k) or 0) for k in COUNT_KEYS}


def usage_of(counts: dict[str, int], response: str | None) -> Usage:
    cached = min(counts["cached_input_tokens"], counts["input_tokens"])
    return Usage(input=counts["input_tokens"] - cached, cache_read=cached,
                 cache_write=counts["cache_write_input_tokens"], output=counts["output_tokens"],
                 reasoning=counts["reasoning_output_tokens"], response=response)
