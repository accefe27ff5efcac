<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en">
<context>
    <name>folio::ExportDialog</name>
    <message numerus="yes">
        <source>All %n page(s); or, for example, 1-3, 8</source>
        <translation>
            <numerusform>All %n page; or, for example, 1-3, 8</numerusform>
            <numerusform>All %n pages; or, for example, 1-3, 8</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>folio::FindBar</name>
    <message numerus="yes">
        <source>%n match(es)</source>
        <translation>
            <numerusform>%n match</numerusform>
            <numerusform>%n matches</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>folio::MainWindow</name>
    <message numerus="yes">
        <source>%1 · %n page(s)</source>
        <translation>
            <numerusform>%1 · %n page</numerusform>
            <numerusform>%1 · %n pages</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n page(s) of “%1” have changes of yours: edited text, deleted blocks, boxes drawn or blocks re-run. Running them again replaces those changes.</source>
        <translation>
            <numerusform>%n page of “%1” has changes of yours: edited text, deleted blocks, boxes drawn or blocks re-run. Running it again replaces those changes.</numerusform>
            <numerusform>%n pages of “%1” have changes of yours: edited text, deleted blocks, boxes drawn or blocks re-run. Running them again replaces those changes.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Exported %n file(s)</source>
        <translation>
            <numerusform>Exported %n file</numerusform>
            <numerusform>Exported %n files</numerusform>
        </translation>
    </message>
</context>
</TS>
