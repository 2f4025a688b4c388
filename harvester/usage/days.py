"""Days of a time zone, in SQL: what turns the usage table's UTC times into the local days every report is by.

It imports nothing of the reports, so the aggregate (harvester/usage/query.py) and the reports
(harvester/usage/report.py) can both name it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, tzinfo


class Days:
    """Days of one time zone (None: the system's local time), in SQL: a UTC time's local day is its text moved by
    the zone's offset at that time. The offsets and the instants they change (DST) since TRANSITIONS_FROM are
    found once (a look at each month, then a bisection to the hour); a CASE over them picks a row's offset."""

    def __init__(self, zone: tzinfo | None, now: datetime | None = None) -> None:
        self.zone = zone
        self._days: dict[str, str] = {}
        self.changes = self._changes(now or datetime.now(UTC))  # [(UTC instant, offset in minutes)], oldest first

    def _offset(self, when: datetime) -> int:
        local = when.astimezone(self.zone) if self.zone else when.astimezone()
        delta = local.utcoffset()
        return int(delta.total_seconds() // 60) if delta else 0

    def _changes(self, now: datetime) -> list[tuple[datetime, int]]:
        when = TRANSITIONS_FROM
        changes = [(when, self._offset(when))]
        end = now + timedelta(days=400)
        while when < end:
            later = (when + timedelta(days=32)).replace(day=1)
            if self._offset(later) != changes[-1][1]:
                low, high = when, later  # the change is in (low, high]: bisect to the hour
                while high - low > timedelta(hours=1):
                    middle = low + (high - low) / 2
                    middle = middle.replace(minute=0, second=0, microsecond=0)
                    if middle <= low:
                        break
                    if self._offset(middle) == changes[-1][1]:
                        low = middle
                    else:
                        high = middle
                changes.append((high, self._offset(high)))
            when = later
        return changes

    def whole_hours(self) -> bool:
        """Whether every offset is whole hours (usage_hours' UTC hours then fall in one local day each)."""
        return all(offset % 60 == 0 for _, offset in self.changes)

    def sql(self, column: str, hours: bool) -> str:
        """SQL for the local day (``YYYY-MM-DD``) of ``column``: a usage row's ``ts``, or (``hours``) a
        usage_hours row's ``hour`` (``YYYY-MM-DDTHH``); '' when it has none."""
        offsets = {offset for _, offset in self.changes}
        if offsets == {0}:
            return f"coalesce(substr({column}, 1, 10), '')"
        when = f"{column} || ':00'" if hours else column
        cut = 13 if hours else 24
        cases = " ".join(f"WHEN {column} < '{_utc_text(instant)[:cut]}' THEN '{previous:+d} minutes'"
                         for (instant, _), (_, previous) in zip(self.changes[1:], self.changes, strict=False))
        modifier = f"CASE {cases} ELSE '{self.changes[-1][1]:+d} minutes' END" if cases \
            else f"'{self.changes[-1][1]:+d} minutes'"
        return f"coalesce(substr(datetime({when}, {modifier}), 1, 10), '')"

    def of_ts(self, ts: str) -> str:
        """The local day of one usage row's time (the blocks report prices each response by it)."""
        hour = ts[:13]
        day = self._days.get(hour) if self.whole_hours() else None
        if day is None:
            when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
            day = (when.astimezone(self.zone) if self.zone else when.astimezone()).date().isoformat()
            self._days[hour] = day
        return day

    def bounds(self, since: date | None, until: date | None) -> tuple[str | None, str | None]:
        """The UTC times (the usage table's form) of the first moment of ``since`` and the first after ``until``."""
        def start_of(day: date) -> str:
            local = datetime(day.year, day.month, day.day, tzinfo=self.zone)
            if self.zone is None:
                local = datetime(day.year, day.month, day.day).astimezone()  # the system's zone then
            return _utc_text(local)

        return (start_of(since) if since else None), (start_of(until + timedelta(days=1)) if until else None)


# Offsets are followed from here on (earlier usage takes the first one): coding agents kept no history before.
TRANSITIONS_FROM = datetime(2020, 1, 1, tzinfo=UTC)


def _utc_text(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
