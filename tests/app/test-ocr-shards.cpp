// Shards of an ocr run: every input in exactly one shard for N from 1 to 64, each shard's inputs unmoved when
// inputs are added at the end, output names found over the whole list, a document complete when its output
// files are in place, and the shards' reports merged with the missing ones named.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <map>
#include <string>
#include <vector>

#include "app/cli/ocr-shards.h"
#include "engine/common/error.h"

namespace folio::cli {
namespace {

std::string error_of(const std::string& text) {
    try {
        parse_shard(text);
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

TEST(OcrShards, ParsesKOfN) {
    const Shard s = parse_shard("3/8");
    EXPECT_EQ(s.index, 3);
    EXPECT_EQ(s.count, 8);
    EXPECT_EQ(parse_shard("0/1").count, 1);
    for (const std::string bad : {"8/8", "-1/4", "1/0", "1", "a/4", "1/4x", "/4", "1/", "1/100001"}) {
        EXPECT_NE(error_of(bad).find("--shard"), std::string::npos) << bad;
    }
}

TEST(OcrShards, EveryInputInExactlyOneShardAndStableUnderAppendedInputs) {
    for (const int n_inputs : {0, 1, 7, 64, 101}) {
        for (int n = 1; n <= 64; ++n) {
            std::vector<int> seen(static_cast<size_t>(n_inputs), 0);
            for (int k = 0; k < n; ++k) {
                const std::vector<int> mine = shard_positions(n_inputs, {k, n});
                const std::vector<int> grown = shard_positions(n_inputs + 13, {k, n});
                ASSERT_LE(mine.size(), grown.size());
                EXPECT_TRUE(std::equal(mine.begin(), mine.end(), grown.begin())) << k << "/" << n;
                for (const int i : mine) {
                    ++seen[static_cast<size_t>(i)];
                }
            }
            EXPECT_EQ(seen, std::vector<int>(static_cast<size_t>(n_inputs), 1))
                << n_inputs << " inputs, N " << n;
        }
    }
}

TEST(OcrShards, OutputNamesComeFromTheWholeList) {
    const QStringList inputs = {QStringLiteral("/a/scan.pdf"), QStringLiteral("/b/page.png"),
                                QStringLiteral("/c/scan.png"), QStringLiteral("/d/report.v2.pdf")};
    const QMap<QString, QString> stems = output_stems(inputs);
    EXPECT_EQ(stems[inputs[0]], QStringLiteral("scan"));
    EXPECT_EQ(stems[inputs[2]], QStringLiteral("scan_png")) << "the second of one name, in any shard";
    EXPECT_EQ(stems[inputs[3]], QStringLiteral("report.v2"));
}

TEST(OcrShards, ADocumentIsCompleteWhenItsOutputsAreInPlace) {
    QTemporaryDir dir;
    const std::vector<ExportFormat> formats = {ExportFormat::Markdown, ExportFormat::Json, ExportFormat::Xlsx,
                                               ExportFormat::SearchablePdf};
    EXPECT_EQ(expected_outputs(dir.path(), QStringLiteral("a"), formats),
              (QStringList{dir.filePath(QStringLiteral("a.md")), dir.filePath(QStringLiteral("a.json")),
                           dir.filePath(QStringLiteral("a.searchable.pdf"))}));
    EXPECT_FALSE(document_complete(dir.path(), QStringLiteral("a"), formats));
    for (const char* name : {"a.md", "a.json"}) {
        QFile f(dir.filePath(QString::fromLatin1(name)));
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    }
    EXPECT_FALSE(document_complete(dir.path(), QStringLiteral("a"), formats)) << "the PDF is missing";
    QFile pdf(dir.filePath(QStringLiteral("a.searchable.pdf")));
    ASSERT_TRUE(pdf.open(QIODevice::WriteOnly));
    EXPECT_TRUE(document_complete(dir.path(), QStringLiteral("a"), formats)) << "an XLSX may never come";
    EXPECT_FALSE(document_complete(dir.path(), QStringLiteral("a"), {ExportFormat::Xlsx}));
}

nlohmann::json report(int k, int n, std::vector<int> positions, int failed = 0) {
    nlohmann::json documents = nlohmann::json::array();
    for (const int p : positions) {
        documents.push_back({{"position", p}, {"input", "doc" + std::to_string(p)}});
    }
    return {
        {"shard", {{"index", k}, {"count", n}}},
        {"totals",
         {{"documents", positions.size()}, {"documents_failed", failed}, {"pages", 2 * positions.size()}}},
        {"documents", documents}};
}

TEST(OcrShards, ReportsMergeInInputOrderAndNameMissingShards) {
    const nlohmann::json merged =
        merge_reports({{"r2", report(2, 3, {2, 5})}, {"r0", report(0, 3, {0, 3, 6}, 1)}});
    EXPECT_EQ(merged["shards"]["present"], nlohmann::json::array({0, 2}));
    EXPECT_EQ(merged["shards"]["missing"], nlohmann::json::array({1}));
    EXPECT_EQ(merged["totals"]["documents"], 5);
    EXPECT_EQ(merged["totals"]["documents_failed"], 1);
    EXPECT_EQ(merged["totals"]["pages"], 10);
    std::vector<int> order;
    for (const auto& d : merged["documents"]) {
        order.push_back(d["position"]);
    }
    EXPECT_EQ(order, (std::vector<int>{0, 2, 3, 5, 6}));
    EXPECT_THROW(merge_reports({{"a", report(0, 3, {0})}, {"b", report(1, 4, {1})}}), Error)
        << "runs of 3 and 4";
    EXPECT_THROW(merge_reports({{"a", report(1, 3, {1})}, {"b", report(1, 3, {1})}}), Error)
        << "shard 1 twice";
    EXPECT_THROW(merge_reports({{"a", nlohmann::json::object()}}), Error) << "not a report";
}

}  // namespace
}  // namespace folio::cli
