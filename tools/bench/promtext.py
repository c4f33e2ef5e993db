"""Prometheus text exposition, read by the benchmarks (realk8s.py,
fgd_real.py): the sum of a metric's samples whose labels match."""
import re

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def metric_sum(text, name, **labels):
    """Sum of name's samples in text whose labels include every given one."""
    total = 0.0
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or m.group(1) != name:
            continue
        got = dict(_LABEL.findall(m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(m.group(3))
    return total
