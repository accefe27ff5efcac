// Splitting a document run between machines under a scheduler (a Slurm job array, a Kubernetes indexed job):
// shard K of N takes the inputs at positions K, K + N, K + 2N, ... of the whole input list, so every input
// falls in exactly one shard and inputs added at the end leave the others where they were. Output names are
// found over the whole list, so shards never write the same file. A document whose output files are all in
// place is complete and a rerun may skip it (the files are renamed into place whole, so their presence is the
// proof; a crash leaves none). Each shard may write a JSON report, and merge_reports sums the shards'.
#pragma once

#include <QMap>
#include <QString>
#include <QStringList>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/export/document-writer.h"

namespace folio::cli {

struct Shard {
    int index = 0;  // K, from 0
    int count = 1;  // N
};

// "K/N" with 0 <= K < N; throws naming the value otherwise.
Shard parse_shard(const std::string& text);

// The positions of a list of n_inputs that the shard takes, in order.
std::vector<int> shard_positions(int n_inputs, const Shard& shard);

// Each input's output name: its file name without the suffix; a name already taken by an earlier input gets
// "_" and its suffix (scan.pdf, scan.png -> scan, scan_png).
QMap<QString, QString> output_stems(const QStringList& inputs);

// The files a complete document of `stem` has in out_dir for the formats: every format's but XLSX, which a
// document without tables never gets.
QStringList expected_outputs(const QString& out_dir, const QString& stem,
                             const std::vector<ExportFormat>& formats);

// Whether every expected output is in place.
bool document_complete(const QString& out_dir, const QString& stem, const std::vector<ExportFormat>& formats);

// The shards' reports as one: their documents in input order, the totals summed, and which shards of the run
// are present or missing. Throws naming the report where shards of different runs (N) are mixed, or a shard
// is given twice.
nlohmann::json merge_reports(const std::vector<std::pair<std::string, nlohmann::json>>& reports);

}  // namespace folio::cli
