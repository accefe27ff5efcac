#include "app/cli/ocr-shards.h"

#include <QDir>
#include <QFileInfo>
#include <QSet>
#include <algorithm>
#include <charconv>
#include <map>

#include "engine/common/error.h"

namespace folio::cli {

namespace {

// The most shards a run splits into.
constexpr int kMaxShards = 100000;

int parse_int(std::string_view text, const std::string& whole) {
    int value = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
        fail("--shard \"", whole, "\": expected K/N with 0 <= K < N, such as 0/4");
    }
    return value;
}

}  // namespace

Shard parse_shard(const std::string& text) {
    const size_t slash = text.find('/');
    if (slash == std::string::npos) {
        fail("--shard \"", text, "\": expected K/N with 0 <= K < N, such as 0/4");
    }
    Shard shard;
    shard.index = parse_int(std::string_view(text).substr(0, slash), text);
    shard.count = parse_int(std::string_view(text).substr(slash + 1), text);
    if (shard.count < 1 || shard.count > kMaxShards || shard.index < 0 || shard.index >= shard.count) {
        fail("--shard ", text, ": K must be in [0, N) and N in [1, ", kMaxShards, "]");
    }
    return shard;
}

std::vector<int> shard_positions(int n_inputs, const Shard& shard) {
    std::vector<int> positions;
    for (int i = shard.index; i < n_inputs; i += shard.count) {
        positions.push_back(i);
    }
    return positions;
}

QMap<QString, QString> output_stems(const QStringList& inputs) {
    QMap<QString, QString> stems;
    QSet<QString> taken;
    for (const QString& input : inputs) {
        const QFileInfo info(input);
        QString stem = info.completeBaseName();
        if (taken.contains(stem)) {
            stem += QLatin1Char('_') + info.suffix();
        }
        taken.insert(stem);
        stems.insert(input, stem);
    }
    return stems;
}

QStringList expected_outputs(const QString& out_dir, const QString& stem,
                             const std::vector<ExportFormat>& formats) {
    QStringList files;
    for (const ExportFormat format : formats) {
        if (format != ExportFormat::Xlsx) {
            files << QDir(out_dir).filePath(stem + exportSuffix(format));
        }
    }
    return files;
}

bool document_complete(const QString& out_dir, const QString& stem,
                       const std::vector<ExportFormat>& formats) {
    const QStringList files = expected_outputs(out_dir, stem, formats);
    return !files.isEmpty() && std::all_of(files.begin(), files.end(),
                                           [](const QString& file) { return QFileInfo(file).isFile(); });
}

nlohmann::json merge_reports(const std::vector<std::pair<std::string, nlohmann::json>>& reports) {
    int count = 0;
    std::map<int, std::string> present;  // shard index -> its report
    std::vector<nlohmann::json> documents;
    nlohmann::json totals = nlohmann::json::object();
    for (const auto& [name, report] : reports) {
        if (!report.is_object() || !report.contains("shard") || !report.contains("documents") ||
            !report.contains("totals")) {
            fail(name, ": not a report of folio-cli ocr --report (no shard, documents or totals)");
        }
        const int index = report["shard"].value("index", -1), n = report["shard"].value("count", 0);
        if (n < 1 || index < 0 || index >= n) {
            fail(name, ": shard ", index, "/", n, " is not a shard of a run");
        }
        if (count != 0 && n != count) {
            fail(name, ": shard ", index, "/", n, " is of another run than the shards of ", count);
        }
        count = n;
        if (present.contains(index)) {
            fail(name, ": shard ", index, "/", n, " given twice (also ", present[index], ")");
        }
        present[index] = name;
        for (const auto& document : report["documents"]) {
            documents.push_back(document);
        }
        for (const auto& [key, value] : report["totals"].items()) {
            if (value.is_number()) {
                totals[key] = totals.value(key, 0.0) + value.get<double>();
            }
        }
    }
    std::sort(documents.begin(), documents.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
        return a.value("position", 0) < b.value("position", 0);
    });
    nlohmann::json missing = nlohmann::json::array();
    for (int k = 0; k < count; ++k) {
        if (!present.contains(k)) {
            missing.push_back(k);
        }
    }
    nlohmann::json shards = nlohmann::json::array();
    for (const auto& [k, name] : present) {
        shards.push_back(k);
    }
    for (auto& [key, value] : totals.items()) {
        if (value.get<double>() == static_cast<double>(static_cast<int64_t>(value.get<double>()))) {
            value = static_cast<int64_t>(value.get<double>());
        }
    }
    return {{"shards", {{"count", count}, {"present", shards}, {"missing", missing}}},
            {"totals", totals},
            {"documents", documents}};
}

}  // namespace folio::cli
