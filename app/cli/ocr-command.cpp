#include "app/cli/ocr-command.h"

#include <unistd.h>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QGuiApplication>
#include <QSet>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "app/cli/cli-service.h"
#include "app/cli/model-command.h"
#include "app/cli/ocr-shards.h"
#include "app/cli/offscreen-application.h"
#include "app/cli/pipeline-flags.h"
#include "app/documents/input-files.h"
#include "app/export/document-writer.h"
#include "app/export/output-folder.h"
#include "app/export/staged-file.h"
#include "app/hub/hub-settings.h"
#include "app/hub/model-locator.h"
#include "app/options/engine-options.h"
#include "app/pipeline/document-pipeline.h"
#include "app/pipeline/source-input.h"
#include "engine/common/error.h"
#include "engine/layout/layout-labels.h"
#include "engine/models/model-registry.h"

namespace folio::cli {

const char* const kOcrUsage =
    R"(  folio-cli ocr INPUT... -o OUTDIR [--pages 1-3,5] [--dpi N] [--format md,json,html,pdf,xlsx,docx]
                [--model DIR|ORG/NAME] [--layout-model DIR|ORG/NAME] [--no-layout [--task TASK]]
                [--chart] [--seal] [--ocr-image-blocks] [--no-stack] [--keep-all-labels]
                [--max-new-tokens N] [--pages-in-flight N] [--render-threads N] [--password P]
                [--recursive] [--shard K/N] [--skip-complete] [--report FILE.json]
                [--device cpu|cuda[:N]] [--threads N] [engine options]
      Turns PDFs, images (PNG, JPEG, TIFF with every page, BMP, WebP) and folders of them into Markdown
      (OUTDIR/NAME.md, figures in OUTDIR/imgs/), JSON as PaddleOCR writes it (NAME.json), HTML (NAME.html),
      a searchable PDF (NAME.pdf: the pages with their text laid invisibly over them), an XLSX workbook
      of the tables (NAME.xlsx) and a Word document (NAME.docx). --format picks (default md,json).
      Layout comes from the layout model paired with --model (PP-DocLayoutV2 for PaddleOCR-VL, V3 for 1.5
      and 1.6) unless --layout-model names one; --no-layout reads each whole page with --task (ocr, table,
      formula, chart, seal, spotting). --chart and --seal recognise charts and seals instead of keeping
      them as images; --keep-all-labels writes headers, footers, page numbers, footnotes and side text into
      the Markdown too. PDF pages are rendered at --dpi (default 200) by --render-threads threads (default
      half the cores, one to four), ahead of the layout model, with at most --pages-in-flight pages held
      (default 32). A progress bar shows on a terminal, plain lines otherwise; Ctrl-C stops within one
      engine step, keeping the pages done. --shard K/N takes inputs K, K+N, K+2N, ... of
      the whole list (folders expanded), so that N machines share an archive (docs/sharding.md); output
      names are found over the whole list, so shards never write the same file. --skip-complete leaves
      documents whose output files are all in place (XLSX aside), as a rerun after a failure needs.
      --report writes the run's documents and totals as JSON; folio-cli summary merges shards' reports.
      Exit codes: 0 all written, 1 nothing could run, 3 some documents, pages or blocks failed (the rest
      written), 130 interrupted.
)";

const char* const kSummaryUsage =
    R"(  folio-cli summary REPORT.json...
      Merges the reports of the shards of one ocr run (--shard K/N --report FILE): their documents in
      input order and the totals, as JSON on stdout, with the shards present and missing. Exit 3 when a
      shard is missing or a document failed, 0 otherwise.
)";

namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_ocr_interrupt(int) {
    g_interrupted.store(true);
    std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

std::string duration_text(double seconds) {
    const auto s = static_cast<int64_t>(seconds + 0.5);
    std::ostringstream out;
    if (s >= 3600) {
        out << s / 3600 << ":" << std::setw(2) << std::setfill('0') << (s / 60) % 60 << ":" << std::setw(2)
            << s % 60;
    } else {
        out << s / 60 << ":" << std::setw(2) << std::setfill('0') << s % 60;
    }
    return out.str();
}

std::vector<ExportFormat> parse_formats(const std::string& text) {
    std::vector<ExportFormat> formats;
    std::stringstream parts(text);
    std::string part;
    while (std::getline(parts, part, ',')) {
        const std::optional<ExportFormat> format = exportFormatFromName(QString::fromStdString(part));
        if (!format) {
            fail("--format: unknown format \"", part, "\" (expected md, json, html, pdf, xlsx or docx)");
        }
        if (std::find(formats.begin(), formats.end(), *format) == formats.end()) {
            formats.push_back(*format);
        }
    }
    if (formats.empty()) {
        fail("--format names no format");
    }
    return formats;
}

// Progress and results on the terminal, each document's files written as its pages come.
class CliObserver final : public PipelineObserver {
public:
    // stems: each input's output name, found over the whole input list (output_stems); positions: each
    // input's place in that list, for the report.
    CliObserver(std::vector<ExportFormat> formats, ExportOptions exportOptions, bool terminal,
                QMap<QString, QString> stems, QMap<QString, int> positions)
        : formats_(std::move(formats)),
          export_(std::move(exportOptions)),
          terminal_(terminal),
          stems_(std::move(stems)),
          positions_(std::move(positions)) {}

    void documentStarted(const DocumentInfo& document) override {
        Writers& w = writers_[document.inputPath];
        DocumentInfo named = document;
        // Two inputs of one name (scan.pdf, scan.png) keep apart: the second gets its suffix in the name.
        named.stem = stems_.value(document.inputPath, named.stem);
        w.info = named;
        for (const ExportFormat format : formats_) {
            w.writers.push_back(makeDocumentWriter(format, export_));
        }
        try {
            for (auto& writer : w.writers) {
                writer->begin(named);
            }
        } catch (const std::exception& e) {
            w.error = e.what();
        }
    }

    void pageFinished(const DocumentInfo& document, const PageResult& page) override {
        Writers& w = writers_.at(document.inputPath);
        if (!page.error.isEmpty()) {
            line("page " + page_name(document, page) + ": error: " + page.error.toStdString());
        }
        for (const BlockResult& block : page.blocks) {
            if (!block.error.isEmpty()) {
                line("page " + page_name(document, page) + " block " + std::to_string(block.id) + " (" +
                     block.label.toStdString() + "): error: " + block.error.toStdString());
            }
        }
        if (!w.error.empty()) {
            return;
        }
        try {
            for (auto& writer : w.writers) {
                writer->addPage(page);
            }
        } catch (const std::exception& e) {
            w.error = e.what();
        }
        if (!terminal_) {
            line("page " + page_name(document, page) + " done: " + std::to_string(page.blocks.size()) +
                 " blocks");
        }
    }

    void documentFinished(const DocumentInfo& document, const DocumentOutcome& outcome) override {
        Writers& w = writers_[document.inputPath];
        QStringList documentFiles;
        if (!outcome.error.isEmpty()) {
            line("error: " + outcome.error.toStdString());
            failed_ = true;
        }
        if (outcome.pagesFailed > 0 || outcome.blocksFailed > 0) {
            failed_ = true;
        }
        if (w.error.empty() && outcome.error.isEmpty() && outcome.pagesDone + outcome.pagesFailed > 0) {
            try {
                for (auto& writer : w.writers) {
                    writer->finish();
                    if (writer->files().isEmpty()) {
                        line("note: " + QFileInfo(document.inputPath).fileName().toStdString() + ": " +
                             notWrittenNote(writer->format()).toStdString());
                    }
                    for (const QString& file : writer->files()) {
                        documentFiles << file;
                        if (!written_.contains(file)) {
                            written_ << file;
                        }
                    }
                    for (const QString& note : writer->notes()) {
                        line("note: " + QFileInfo(document.inputPath).fileName().toStdString() + ": " +
                             note.toStdString());
                    }
                }
            } catch (const std::exception& e) {
                w.error = e.what();
            }
        }
        if (!w.error.empty()) {
            for (auto& writer : w.writers) {
                writer->abort();
            }
            line("error: " + w.error);
            failed_ = true;
        }
        if (outcome.cancelled) {
            line(QFileInfo(document.inputPath).fileName().toStdString() + ": interrupted after " +
                 std::to_string(outcome.pagesDone) + " of " + std::to_string(document.pageCount) + " pages");
        }
        const bool broken = !w.error.empty() || !outcome.error.isEmpty();
        nlohmann::json files = nlohmann::json::array();
        for (const QString& file : broken ? QStringList() : documentFiles) {
            files.push_back(file.toStdString());
        }
        report_.push_back(
            {{"position", positions_.value(document.inputPath, -1)},
             {"input", document.inputPath.toStdString()},
             {"stem", w.info.stem.toStdString()},
             {"status", outcome.cancelled                                ? "interrupted"
                        : broken                                         ? "failed"
                        : outcome.pagesFailed + outcome.blocksFailed > 0 ? "written with failures"
                                                                         : "written"},
             {"error", !outcome.error.isEmpty() ? outcome.error.toStdString() : w.error},
             {"pages", outcome.pagesDone},
             {"pages_failed", outcome.pagesFailed},
             {"blocks_failed", outcome.blocksFailed},
             {"files", files}});
        writers_.erase(document.inputPath);
    }

    void progressChanged(const PipelineProgress& p) override {
        if (!terminal_) {
            return;
        }
        constexpr int kWidth = 24;
        const double fraction = p.pagesTotal > 0 ? static_cast<double>(p.pagesDone) / p.pagesTotal : 0.0;
        const int filled = static_cast<int>(fraction * kWidth);
        std::ostringstream bar;
        bar << "\r[" << std::string(static_cast<size_t>(filled), '#')
            << std::string(static_cast<size_t>(kWidth - filled), '-') << "] " << p.pagesDone << "/"
            << p.pagesTotal << " pages, " << p.blocksDone << "/" << p.blocksTotal << " blocks, " << std::fixed
            << std::setprecision(0) << p.tokensPerSecond << " tokens/s, " << duration_text(p.elapsedSeconds);
        if (p.etaSeconds) {
            bar << ", ETA " << duration_text(*p.etaSeconds);
        }
        bar << "\033[K";
        std::cerr << bar.str() << std::flush;
        bar_shown_ = true;
    }

    // Ends the progress bar's line, so that what follows starts on its own.
    void endBar() {
        if (bar_shown_) {
            std::cerr << "\n";
            bar_shown_ = false;
        }
    }

    void line(const std::string& text) {
        endBar();
        std::cerr << "folio-cli: " << text << "\n";
    }

    bool failed() const { return failed_; }
    const QStringList& written() const { return written_; }
    // A line a document finished: its place in the input list, status, pages and files.
    const std::vector<nlohmann::json>& report() const { return report_; }

private:
    struct Writers {
        DocumentInfo info;
        std::vector<std::unique_ptr<DocumentWriter>> writers;
        std::string error;
    };

    static std::string page_name(const DocumentInfo& document, const PageResult& page) {
        std::string name = QFileInfo(document.inputPath).fileName().toStdString();
        if (page.pageIndex >= 0) {
            name += " " + std::to_string(page.pageIndex + 1) + "/" + std::to_string(page.pageCount);
        }
        return name;
    }

    std::vector<ExportFormat> formats_;
    ExportOptions export_;
    bool terminal_;
    std::map<QString, Writers> writers_;
    QMap<QString, QString> stems_;
    QMap<QString, int> positions_;
    std::vector<nlohmann::json> report_;
    QStringList written_;
    bool failed_ = false;
    bool bar_shown_ = false;
};

}  // namespace

int run_ocr(int argc, char** argv, int first) {
    // Qt's PDF writer and fonts need a GUI application; folio-cli draws on no screen.
    const OffscreenApplication application(argv[0]);

    // Inputs and options in any order: anything that is not an option or an option's value is an input.
    // "-o DIR" is --output DIR; folio-cli's own switches are passed on as --name=true.
    std::vector<std::string> inputs;
    std::vector<std::string> rewritten{argv[0]};
    static const std::vector<std::string> kSwitches = {
        "--no-layout", "--chart",           "--seal",      "--ocr-image-blocks",
        "--no-stack",  "--keep-all-labels", "--recursive", "--skip-complete"};
    for (int i = first; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.empty() || arg[0] != '-' || arg == "-") {
            inputs.push_back(arg);
            continue;
        }
        if (std::find(kSwitches.begin(), kSwitches.end(), arg) != kSwitches.end()) {
            rewritten.push_back(arg + "=true");
            continue;
        }
        rewritten.push_back(arg == "-o" ? std::string("--output") : arg);
        const bool takes_value = arg.find('=') == std::string::npos && arg != "--help" &&
                                 !is_engine_switch(arg) &&
                                 !(arg.rfind("--no-", 0) == 0 && is_engine_switch("--" + arg.substr(5)));
        if ((takes_value || (is_engine_switch(arg) && i + 1 < argc && is_switch_word(arg, argv[i + 1]))) &&
            i + 1 < argc) {
            rewritten.push_back(argv[++i]);
        }
    }
    std::vector<char*> option_args;
    for (std::string& arg : rewritten) {
        option_args.push_back(arg.data());
    }
    const Options opt(static_cast<int>(option_args.size()), option_args.data(), 1);
    if (opt.has("--help")) {
        std::cout << "usage:\n" << kOcrUsage << "\n" << engine_usage();
        return kOcrOk;
    }
    opt.allow(with_engine_flags({"--output",
                                 "--pages",
                                 "--dpi",
                                 "--format",
                                 "--model",
                                 "--layout-model",
                                 "--no-layout",
                                 "--task",
                                 "--chart",
                                 "--seal",
                                 "--ocr-image-blocks",
                                 "--no-stack",
                                 "--keep-all-labels",
                                 "--max-new-tokens",
                                 "--pages-in-flight",
                                 "--render-threads",
                                 "--password",
                                 "--recursive",
                                 "--shard",
                                 "--skip-complete",
                                 "--report",
                                 "--device",
                                 "--threads",
                                 "--layout-batch"}));
    if (inputs.empty()) {
        fail("no input: name PDFs, images or folders");
    }
    const std::string out_dir = opt.text("--output");
    const std::vector<ExportFormat> formats = parse_formats(opt.text("--format", "md,json"));

    InputOptions input_options;
    input_options.recursive = opt.has("--recursive");
    QStringList given;
    for (const std::string& input : inputs) {
        given << QString::fromStdString(input);
    }
    const QStringList all_files = collectInputFiles(given, input_options);
    // The shard's inputs of the whole list, less those complete already where asked.
    const Shard shard = parse_shard(opt.text("--shard", "0/1"));
    const QMap<QString, QString> stems = output_stems(all_files);
    QMap<QString, int> positions;
    QStringList files;
    std::vector<nlohmann::json> skipped;
    const QString absolute_out = QDir(QString::fromStdString(out_dir)).absolutePath();
    for (const int i : shard_positions(static_cast<int>(all_files.size()), shard)) {
        const QString& file = all_files[i];
        positions.insert(file, i);
        if (opt.has("--skip-complete") && document_complete(absolute_out, stems[file], formats)) {
            skipped.push_back({{"position", i},
                               {"input", file.toStdString()},
                               {"stem", stems[file].toStdString()},
                               {"status", "skipped"}});
            continue;
        }
        files << file;
    }
    if (!skipped.empty()) {
        std::cerr << "folio-cli: " << skipped.size() << " documents complete already, skipped\n";
    }
    std::optional<QString> report_path;
    if (opt.has("--report")) {
        report_path = QDir().absoluteFilePath(QString::fromStdString(opt.text("--report")));
    }
    // The run's documents (skipped ones too) in input order, with its totals, written whole or not at all.
    const auto write_report = [&](std::vector<nlohmann::json> documents, const PipelineSummary& summary) {
        if (!report_path) {
            return;
        }
        documents.insert(documents.end(), skipped.begin(), skipped.end());
        std::sort(documents.begin(), documents.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
            return a.value("position", 0) < b.value("position", 0);
        });
        const nlohmann::json report = {{"shard", {{"index", shard.index}, {"count", shard.count}}},
                                       {"inputs", static_cast<int64_t>(all_files.size())},
                                       {"totals",
                                        {{"documents", summary.documents},
                                         {"documents_failed", summary.documentsFailed},
                                         {"documents_skipped", static_cast<int64_t>(skipped.size())},
                                         {"pages", summary.pages},
                                         {"pages_failed", summary.pagesFailed},
                                         {"blocks", summary.blocks},
                                         {"blocks_failed", summary.blocksFailed},
                                         {"tokens", summary.tokens},
                                         {"seconds", summary.seconds}}},
                                       {"interrupted", summary.cancelled},
                                       {"documents", documents}};
        StagedFile staged(*report_path);
        staged.file().write(QByteArray::fromStdString(report.dump(2) + "\n"));
        staged.commit();
    };

    DocumentOptions document_options = document_options_from(opt);
    document_options.password = QString::fromStdString(opt.text("--password", ""));
    const PageRange range = PageRange::parse(opt.text("--pages", "all"));

    PipelineOptions pipeline_options;
    pipeline_options.useLayout = !opt.has("--no-layout");
    if (opt.has("--task")) {
        if (pipeline_options.useLayout) {
            fail("--task applies with --no-layout");
        }
        static const QStringList kTasks = {"ocr", "table", "formula", "chart", "seal", "spotting"};
        const QString task = QString::fromStdString(opt.text("--task")).toLower();
        if (!kTasks.contains(task)) {
            fail("--task: unknown task \"", task.toStdString(), "\" (expected ",
                 kTasks.join(", ").toStdString(), ")");
        }
        pipeline_options.wholePageLabel =
            task == QLatin1String("formula") ? QStringLiteral("display_formula") : task;
        pipeline_options.recognition.chartRecognition = task == QLatin1String("chart");
        pipeline_options.recognition.sealRecognition = task == QLatin1String("seal");
    }
    RecognitionOptions& recognition = pipeline_options.recognition;
    recognition.chartRecognition = recognition.chartRecognition || opt.has("--chart");
    recognition.sealRecognition = recognition.sealRecognition || opt.has("--seal");
    recognition.ocrForImageBlocks = opt.has("--ocr-image-blocks");
    recognition.stackTextBlocks = !opt.has("--no-stack");
    recognition.maxNewTokens = static_cast<int>(opt.integer("--max-new-tokens", 4096));

    ExportOptions export_options;
    export_options.outputDir = QDir(QString::fromStdString(out_dir)).absolutePath();
    if (opt.has("--keep-all-labels")) {
        for (const std::string_view label : kLayoutLabels) {
            export_options.markdownLabels.insert(
                QString::fromUtf8(label.data(), static_cast<qsizetype>(label.size())));
        }
    }

    if (files.isEmpty()) {
        // Nothing left to do in this shard: no model is loaded.
        write_report({}, PipelineSummary{});
        std::cerr << "folio-cli: nothing to do in shard " << shard.index << "/" << shard.count << "\n";
        return kOcrOk;
    }

    // The models, then the engine.
    const std::string model_spec = opt.text("--model");
    const std::filesystem::path model_dir = resolve_model_option(model_spec, opt.has("--tokenizer"));
    const ModelDescription described = describe_model(model_dir);
    if (described.role != ModelRole::Recognition) {
        // A chat model has no task prompts to read blocks with, and a layout model reads no text.
        fail("--model ", model_dir.string(), " is a ", model_role_name(described.role), " model (",
             described.family,
             "), not a document recognition model: ocr reads pages with PaddleOCR-VL (folio-cli "
             "model pull PaddlePaddle/PaddleOCR-VL-1.5)",
             described.role == ModelRole::Chat ? "; folio-cli generate talks with a chat model" : "");
    }
    std::optional<std::filesystem::path> layout_dir;
    if (pipeline_options.useLayout) {
        layout_dir = resolve_layout_model(opt, model_spec);
    }
    const EngineOptions engine_options = parse_engine_options(opt, described);
    apply_pipeline_flags(opt, engine_options, pipeline_options);
    makeOutputFolder(export_options.outputDir);
    EngineService service;
    load_service(service, opt, model_dir, engine_options, layout_dir, pipeline_options.layoutBatch);

    const bool terminal = isatty(fileno(stderr)) != 0;
    CliObserver observer(formats, export_options, terminal, stems, positions);
    QSet<QString> notes_shown;
    DocumentPipeline pipeline(service,
                              sourceOpener(document_options, range,
                                           [&](const QString& note) {
                                               if (!notes_shown.contains(note)) {
                                                   notes_shown.insert(note);
                                                   std::cerr << "folio-cli: note: " << note.toStdString()
                                                             << "\n";
                                               }
                                           }),
                              pipeline_options);

    // Ctrl-C cancels the run; a watcher passes it on, since a signal handler may only set a flag.
    g_interrupted.store(false);
    std::signal(SIGINT, on_ocr_interrupt);
    std::atomic<bool> finished{false};
    std::thread watcher([&] {
        while (!finished.load()) {
            if (g_interrupted.load()) {
                pipeline.cancel();
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    PipelineSummary summary;
    try {
        summary = pipeline.run(files, observer);
    } catch (...) {
        finished.store(true);
        watcher.join();
        std::signal(SIGINT, SIG_DFL);
        throw;
    }
    finished.store(true);
    watcher.join();
    std::signal(SIGINT, SIG_DFL);
    observer.endBar();

    std::ostringstream line;
    line << std::fixed << std::setprecision(1) << "folio-cli: " << summary.documents << " documents, "
         << summary.pages << " pages, " << summary.blocks << " blocks, " << summary.tokens << " tokens in "
         << summary.seconds << " s (" << std::setprecision(2)
         << (summary.seconds > 0 ? summary.pages / summary.seconds : 0.0) << " pages/s)";
    if (summary.pagesFailed + summary.blocksFailed + summary.documentsFailed > 0) {
        line << "; failed: " << summary.documentsFailed << " documents, " << summary.pagesFailed << " pages, "
             << summary.blocksFailed << " blocks";
    }
    if (summary.cancelled) {
        line << "; interrupted";
    }
    std::cerr << line.str() << "\n";
    write_report(observer.report(), summary);
    for (const QString& file : observer.written()) {
        std::cout << file.toStdString() << "\n";
    }
    if (summary.cancelled) {
        return kOcrCancelled;
    }
    return observer.failed() ? kOcrSomeFailed : kOcrOk;
}

int run_summary(int argc, char** argv, int first) {
    std::vector<std::pair<std::string, nlohmann::json>> reports;
    for (int i = first; i < argc; ++i) {
        const std::string path = argv[i];
        if (path == "--help") {
            std::cout << "usage:\n" << kSummaryUsage;
            return 0;
        }
        QFile file(QString::fromStdString(path));
        if (!file.open(QIODevice::ReadOnly)) {
            fail(path, ": cannot read: ", file.errorString().toStdString());
        }
        const QByteArray bytes = file.readAll();
        nlohmann::json report =
            nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size(), nullptr, false);
        if (report.is_discarded()) {
            fail(path, ": not JSON");
        }
        reports.emplace_back(path, std::move(report));
    }
    if (reports.empty()) {
        fail("summary: name the shards' reports (folio-cli ocr --report FILE)");
    }
    const nlohmann::json merged = merge_reports(reports);
    std::cout << merged.dump(2) << "\n";
    const nlohmann::json& totals = merged["totals"];
    const int64_t failed = totals.value("documents_failed", int64_t{0});
    const size_t missing = merged["shards"]["missing"].size();
    std::cerr << "folio-cli: " << merged["shards"]["present"].size() << " of " << merged["shards"]["count"]
              << " shards; " << totals.value("documents", int64_t{0}) << " documents written (" << failed
              << " failed), " << totals.value("documents_skipped", int64_t{0}) << " complete already; "
              << totals.value("pages", int64_t{0}) << " pages";
    if (missing > 0) {
        std::cerr << "; missing shards: " << merged["shards"]["missing"].dump();
    }
    std::cerr << "\n";
    return missing > 0 || failed > 0 ? kOcrSomeFailed : kOcrOk;
}

}  // namespace folio::cli
