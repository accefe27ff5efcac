#!/usr/bin/env python3
"""Prints a Word document as python-docx reads it, as JSON: the body's paragraphs and tables in order
(paragraphs that hold text or a style of their own, with their style name and text; tables as rows of cell texts with the grid positions each cell
covers), the pictures' sizes in EMUs, the page breaks and the core title.

    read-docx.py FILE.docx
"""
import json
import sys

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


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
            if p.text.strip() or p.style.name != "Normal":
                body.append({"style": p.style.name, "text": p.text})
        elif child.tag == W + "tbl":
            body.append({"table": table_json(Table(child, document))})
    breaks = sum(1 for br in document.element.body.iter(W + "br") if br.get(W + "type") == "page")
    pictures = [[shape.width, shape.height] for shape in document.inline_shapes]
    print(json.dumps({"body": body, "pictures": pictures, "page_breaks": breaks,
                      "title": document.core_properties.title}))


if __name__ == "__main__":
    main(sys.argv[1])
