"""Tables as readable HTML for the Snakemake report (a CSV only downloads there; HTML is shown).

One look for every table: a caption, a header that stays in view while scrolling, numbers right
aligned to four significant digits (0.6, not 0.6000000000000001; 20000, not 2e+04), missing values
as a dash.  A cell holding a (main, detail) pair shows the detail in small grey type below.
"""

from __future__ import annotations

import html
import math
import numbers

import pandas as pd

from . import io

# class names carry a prefix: the recommendation is also embedded in the report's own page
STYLE = """<style>
table.lp-table { border-collapse: collapse; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: #111827; margin: 0 0 1em 0; }
table.lp-table caption { caption-side: top; text-align: left; font-weight: 600; font-size: 14px; padding: 2px 0 8px; }
table.lp-table th { position: sticky; top: 0; background: #e5e7eb; text-align: left; vertical-align: bottom;
  padding: 4px 8px; border-bottom: 2px solid #6b7280; font-weight: 600; max-width: 12em; }
table.lp-table td { padding: 3px 8px; border-bottom: 1px solid #e5e7eb; vertical-align: top; white-space: nowrap; }
table.lp-table tr:nth-child(even) td { background: #f9fafb; }
table.lp-table td.lp-num { text-align: right; font-variant-numeric: tabular-nums; }
table.lp-table td.lp-missing { color: #9ca3af; text-align: center; }
table.lp-table td span.lp-detail { display: block; color: #4b5563; font-size: 12px; }
table.lp-table td.lp-long { white-space: normal; min-width: 22em; font-size: 12px; overflow-wrap: anywhere; }
table.lp-table td.lp-pair { white-space: normal; min-width: 10em; max-width: 20em; }
</style>"""
# Embedded in the report's first page (Snakemake's landing view), whose layout centres its content
# vertically (cutting off the top of anything taller than the window) in a 32rem column beside the
# rule graph: in the container holding this table only, start at the top, take the full width and
# put the rule graph below.
LANDING_STYLE = """<style>
div.items-center.justify-center.h-screen:has(table.lp-table) { align-items: flex-start; justify-content: flex-start; }
div.grow.flex.gap-3:has(table.lp-table) { flex-wrap: wrap; }
div.prose.max-w-lg:has(table.lp-table) { max-width: 72rem; }
</style>"""
MISSING = "—"


def number(v) -> str:
    """A number written for a reader: integers whole, others to four significant digits."""
    if isinstance(v, bool):
        return str(v)
    f = float(v)
    if math.isnan(f):
        return MISSING
    if math.isinf(f):
        return "∞" if f > 0 else "−∞"
    if f.is_integer() and abs(f) < 1e15:
        return str(int(f))
    if abs(f) >= 1e4:
        return f"{f:.0f}"
    if abs(f) < 1e-3:
        return f"{f:.3e}"
    return f"{f:.4g}"


def _cell(v) -> str:
    if isinstance(v, tuple):
        main, detail = v
        return (
            f'<td class="lp-pair">{html.escape(str(main))}'
            + (f'<span class="lp-detail">{html.escape(str(detail))}</span>' if detail else "")
            + "</td>"
        )
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return f'<td class="lp-missing">{MISSING}</td>'
    if isinstance(v, numbers.Number):
        return f'<td class="lp-num">{number(v)}</td>'
    text = str(v)
    if text == "":
        return f'<td class="lp-missing">{MISSING}</td>'
    return f'<td class="lp-long">{html.escape(text)}</td>' if len(text) > 40 else f"<td>{html.escape(text)}</td>"


def table_html(frame: pd.DataFrame, title: str = "") -> str:
    """One ``<table>`` (no document around it)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "\n".join(
        "<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in frame.itertuples(index=False, name=None)
    )
    caption = f"<caption>{html.escape(title)}</caption>" if title else ""
    return f'<table class="lp-table">{caption}<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>'


def write_html(frame: pd.DataFrame, path, title: str = "", fragment: bool = False) -> None:
    """``frame`` as an HTML table: a whole page, or (``fragment``) the style and table alone, to
    embed in the report's first page."""
    write_html_tables([(frame, title)], path, fragment)


def write_html_tables(tables: list[tuple[pd.DataFrame, str]], path, fragment: bool = False) -> None:
    """Several (frame, title) tables, one below the other, as :func:`write_html` writes one."""
    body = "\n".join(table_html(frame, title) for frame, title in tables)
    table = (LANDING_STYLE if fragment else "") + STYLE + "\n" + body
    title = tables[0][1] if tables else ""
    text = (
        table
        if fragment
        else (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"</head>\n<body>\n{table}\n</body></html>"
        )
    )
    with io.atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")


def csv_to_html(
    *,
    csv_path,
    out_html,
    title: str,
    hide: list[str] = (),
    first: list[str] = (),
    last: list[str] = (),
    settings: bool = False,
) -> None:
    """A CSV the workflow wrote, as a page (empty fields shown as missing): without the ``hide``
    columns, the ``first`` columns first, the ``last`` (long texts) last and, with ``settings``, the
    parameter columns of a
    ``runs.csv``-shaped table (between ``mechanism`` and ``reps``, ``trust_model`` aside) as one
    ``setting`` column of the values a row has ("epsilon=2, h=0.55"), so the metrics are in view."""
    frame = pd.read_csv(csv_path, keep_default_na=False, na_values=[""])
    frame = frame.drop(columns=[c for c in hide if c in frame])
    if settings:
        columns = list(frame.columns)
        params = [c for c in columns[columns.index("mechanism") + 1 : columns.index("reps")] if c != "trust_model"]
        setting = frame[params].apply(
            lambda row: ", ".join(f"{k}={_plain(v)}" for k, v in row.items() if not pd.isna(v)), axis=1
        )
        frame = frame.drop(columns=params)
        frame.insert(frame.columns.get_loc("reps"), "setting", setting)
    front, back = [c for c in first if c in frame], [c for c in last if c in frame]
    write_html(frame[front + [c for c in frame.columns if c not in front + back] + back], out_html, title)


def _plain(v) -> str:
    return number(v) if isinstance(v, numbers.Number) else str(v)
