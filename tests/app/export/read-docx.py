#!/usr/bin/env python3
"""Prints a Word document as python-docx reads it, as JSON: the body's paragraphs and tables in order
(paragraphs that hold text, an equation or a style of their own, with their style name, text and equations; tables as rows of cell texts with the grid positions each cell
covers), the pictures' sizes in EMUs, the page breaks and the core title.

    read-docx.py FILE.docx
"""
import json
import sys

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"


def math_json(paragraph):
    """A paragraph's equations: each m:oMath's text and the names of its top-level elements."""
    equations = []
    for o in paragraph.iter(M + "oMath"):
        equations.append({"text": "".join(t.text or "" for t in o.iter(M + "t")),
                          "elements": [child.tag[len(M):] for child in o]})
    return equations


def table_json(table):
    rows, covers = [], {}
    for r, row in enumerate(table.rows):
        texts = []
        for c, cell in enumerate(row.cells):
            texts.append(cell.text)
            covers.setdefault(cell._tc.getroottree().getpath(cell._tc), []).append([r, c])
        rows.append(texts)
    return {"rows": rows, "merged": sorted(v for v in covers.values() if len(v) > 1)}


def main(path):
    document = docx.Document(path)
    body = []
    for child in document.element.body.iterchildren():
        if child.tag == W + "p":
            p = Paragraph(child, document)
            entry = {"style": p.style.name, "text": p.text}
            equations = math_json(child)
            if equations:
                entry["math"] = equations
            if p.text.strip() or p.style.name != "Normal" or equations:
                body.append(entry)
        elif child.tag == W + "tbl":
            body.append({"table": table_json(Table(child, document))})
    breaks = sum(1 for br in document.element.body.iter(W + "br") if br.get(W + "type") == "page")
    pictures = [[shape.width, shape.height] for shape in document.inline_shapes]
    print(json.dumps({"body": body, "pictures": pictures, "page_breaks": breaks,
                      "title": document.core_properties.title}))


if __name__ == "__main__":
    main(sys.argv[1])
