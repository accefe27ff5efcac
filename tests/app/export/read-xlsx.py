#!/usr/bin/env python3
"""Prints an XLSX workbook as JSON for the export tests, with the standard library only: its worksheets in
order with their names, cells (type, value, number format, bold), merged ranges and column widths. Every XML
part it reads must parse."""
import json
import sys
import zipfile
import xml.etree.ElementTree as ET

MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
PACKAGE_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"

# The built-in number formats the writer may use without declaring them.
BUILTIN_FORMATS = {0: "General", 1: "0", 2: "0.00", 3: "#,##0", 4: "#,##0.00", 49: "@"}


def text_of(element):
    return "".join(t.text or "" for t in element.iter(MAIN + "t"))


def read(path):
    with zipfile.ZipFile(path) as archive:
        if archive.testzip() is not None:
            raise SystemExit("corrupt member in " + path)
        names = set(archive.namelist())

        def xml(name):
            return ET.fromstring(archive.read(name))

        for name in names:
            if name.endswith(".xml") or name.endswith(".rels"):
                xml(name)  # well-formed, or this raises

        shared = []
        if "xl/sharedStrings.xml" in names:
            shared = [text_of(si) for si in xml("xl/sharedStrings.xml").iter(MAIN + "si")]

        styles = xml("xl/styles.xml")
        formats = dict(BUILTIN_FORMATS)
        for fmt in styles.iter(MAIN + "numFmt"):
            formats[int(fmt.get("numFmtId"))] = fmt.get("formatCode")
        fonts = [font.find(MAIN + "b") is not None for font in styles.find(MAIN + "fonts")]
        xfs = []
        for xf in styles.find(MAIN + "cellXfs"):
            xfs.append({
                "format": formats.get(int(xf.get("numFmtId", "0")), "?"),
                "bold": fonts[int(xf.get("fontId", "0"))],
            })

        targets = {r.get("Id"): r.get("Target") for r in xml("xl/_rels/workbook.xml.rels").iter(PACKAGE_REL + "Relationship")}
        sheets = []
        for sheet in xml("xl/workbook.xml").iter(MAIN + "sheet"):
            target = targets[sheet.get(REL + "id")]
            part = xml("xl/" + target.lstrip("/").removeprefix("xl/"))
            cells = {}
            for c in part.iter(MAIN + "c"):
                kind = c.get("t", "n")
                v = c.find(MAIN + "v")
                style = xfs[int(c.get("s", "0"))]
                if kind == "s":
                    value = shared[int(v.text)]
                elif kind == "inlineStr":
                    value = text_of(c)
                    kind = "s"
                elif v is None:
                    kind, value = "blank", None
                elif kind == "n":
                    value = float(v.text)
                else:
                    value = v.text
                cells[c.get("r")] = {"type": kind, "value": value, **style}
            merges = [m.get("ref") for m in part.iter(MAIN + "mergeCell")]
            columns = [{"min": int(col.get("min")), "max": int(col.get("max")), "width": float(col.get("width"))}
                       for col in part.iter(MAIN + "col")]
            sheets.append({"name": sheet.get("name"), "cells": cells, "merges": merges, "columns": columns})
        return {"sheets": sheets}


if __name__ == "__main__":
    json.dump(read(sys.argv[1]), sys.stdout, ensure_ascii=False)
