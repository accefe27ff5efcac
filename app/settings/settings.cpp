#include "app/settings/settings.h"

#include <QFileInfo>
#include <QRegularExpression>
#include <algorithm>

#include "app/documents/document-source.h"
#include "app/hub/hub-cache.h"
#include "app/options/cli-options.h"
#include "app/options/device-memory.h"
#include "app/settings/compute-devices.h"
#include "engine/common/error.h"
#include "engine/layout/layout-labels.h"
#include "engine/models/model-registry.h"

namespace folio {

namespace {

// QSettings keys.
constexpr auto kModel = "models/recognition";
constexpr auto kLayoutModel = "models/layout";
constexpr auto kChatModel = "models/chat";
constexpr auto kDevice = "engine/device";
constexpr auto kTensorParallel = "engine/tensor_parallel";
constexpr auto kQuantization = "engine/quantization";
constexpr auto kVisionQuantization = "engine/quantize_vision";
constexpr auto kGpuMemory = "engine/gpu_memory_utilization";
constexpr auto kMaxModelLen = "engine/max_model_len";
constexpr auto kMaxNumSeqs = "engine/max_num_seqs";
constexpr auto kMaxBatchedTokens = "engine/max_num_batched_tokens";
constexpr auto kPrefixCaching = "engine/enable_prefix_caching";
constexpr auto kKvCacheDtype = "engine/kv_cache_dtype";
constexpr auto kDpi = "documents/dpi";
constexpr auto kThresholds = "documents/layout_thresholds";
constexpr auto kMarkdownLabels = "documents/markdown_labels";
constexpr auto kExportFormats = "export/formats";
constexpr auto kLanguage = "interface/language";

// With no model known, max_model_len is bounded by its own range alone.
constexpr int64_t kUnknownContext = 1 << 20;

// The setting an engine option's message names ("--max-num-seqs must be ...").
QString keyOfEngineMessage(const QString& message) {
    static const QList<std::pair<QString, const char*>> flags = {
        {QStringLiteral("--gpu-memory-utilization"), kGpuMemory},
        {QStringLiteral("--max-model-len"), kMaxModelLen},
        {QStringLiteral("--max-num-seqs"), kMaxNumSeqs},
        {QStringLiteral("--max-num-batched-tokens"), kMaxBatchedTokens},
        {QStringLiteral("--enable-prefix-caching"), kPrefixCaching},
        {QStringLiteral("--kv-cache-dtype"), kKvCacheDtype},
        {QStringLiteral("--quantization"), kQuantization},
        {QStringLiteral("--quantize-vision"), kVisionQuantization},
        {QStringLiteral("--device"), kDevice},
    };
    for (const auto& [flag, key] : flags) {
        if (message.startsWith(flag)) {
            return QString::fromLatin1(key);
        }
    }
    return message.contains(QStringLiteral("quantization")) ? QString::fromLatin1(kQuantization)
                                                            : QString::fromLatin1(kDevice);
}

// The cards of a device setting ("cuda:0,cuda:1": 2).
int cardCount(const QString& device) {
    return static_cast<int>(device.count(QLatin1Char(',')) + 1);
}

std::vector<std::pair<std::string, std::string>> engineValues(const SettingsValues& v) {
    std::vector<std::pair<std::string, std::string>> values = {
        {"quantization", v.quantization.toStdString()},
        {"quantize_vision", v.visionQuantization == QLatin1String("fp8") ? "fp8" : "false"},
        {"gpu_memory_utilization", QString::number(v.gpuMemoryUtilization, 'g', 10).toStdString()},
        {"max_num_seqs", std::to_string(v.maxNumSeqs)},
        {"max_num_batched_tokens", std::to_string(v.maxNumBatchedTokens)},
        {"enable_prefix_caching", v.enablePrefixCaching ? "true" : "false"},
        {"kv_cache_dtype", v.kvCacheDtype.toStdString()},
        {"tensor_parallel_size", std::to_string(v.tensorParallel ? cardCount(v.device) : 1)},
    };
    if (v.maxModelLen != 0) {
        values.emplace_back("max_model_len", std::to_string(v.maxModelLen));
    }
    return values;
}

bool isDevice(const QString& device) {
    // One device, or several cards, each with a copy of the models.
    static const QRegularExpression pattern(
        QStringLiteral("^(cpu|cuda(:[0-9]{1,3})?|cuda:[0-9]{1,3}(,cuda:[0-9]{1,3})+)$"));
    return pattern.match(device).hasMatch();
}

QStringList sorted(QStringList list) {
    list.removeDuplicates();
    list.sort();
    return list;
}

}  // namespace

const char* engineImpactName(EngineImpact impact) {
    switch (impact) {
        case EngineImpact::None:
            return "none";
        case EngineImpact::Reconfigure:
            return "reconfigure";
        case EngineImpact::Reload:
            return "reload";
    }
    return "?";
}

Settings::Settings(QObject* parent) : QObject(parent), store_(std::make_unique<QSettings>()) {
    load();
}

Settings::Settings(const QString& iniPath, QObject* parent)
    : QObject(parent), store_(std::make_unique<QSettings>(iniPath, QSettings::IniFormat)) {
    load();
}

Settings::~Settings() = default;

bool Settings::hasStoredDevice() const {
    return store_->contains(QLatin1String(kDevice));
}

QString Settings::fileName() const {
    return store_->fileName();
}

SettingsValues Settings::defaults(const QString& device) {
    SettingsValues v;
    v.device = device;
    v.maxNumSeqs = device == QStringLiteral("cpu") ? 8 : 256;
    const QStringList ignored = {QStringLiteral("number"),     QStringLiteral("footnote"),
                                 QStringLiteral("header"),     QStringLiteral("header_image"),
                                 QStringLiteral("footer"),     QStringLiteral("footer_image"),
                                 QStringLiteral("aside_text"), QStringLiteral("formula_number")};
    for (const QString& label : layoutLabels()) {
        if (!ignored.contains(label)) {
            v.markdownLabels << label;
        }
    }
    v.exportFormats = {QStringLiteral("md"), QStringLiteral("json")};
    return v;
}

QStringList Settings::layoutLabels() {
    QStringList labels;
    for (const std::string_view label : kLayoutLabels) {
        labels << QString::fromLatin1(label.data(), static_cast<qsizetype>(label.size()));
    }
    return labels;
}

QStringList Settings::exportFormatNames() {
    return {QStringLiteral("md"),  QStringLiteral("json"), QStringLiteral("html"),
            QStringLiteral("pdf"), QStringLiteral("xlsx"), QStringLiteral("docx")};
}

QStringList Settings::languages() {
    return {QStringLiteral("en"), QStringLiteral("zh_CN")};
}

void Settings::load() {
    const QSettings& s = *store_;
    // A first start runs on the first CUDA device where there is one.
    const QString device = s.value(kDevice, computeDevices().front().id).toString();
    const SettingsValues d = defaults(device);
    SettingsValues v = d;
    v.model = s.value(kModel, d.model).toString();
    v.layoutModel = s.value(kLayoutModel, d.layoutModel).toString();
    v.chatModel = s.value(kChatModel, d.chatModel).toString();
    v.tensorParallel = s.value(kTensorParallel, d.tensorParallel).toBool();
    v.quantization = s.value(kQuantization, d.quantization).toString();
    v.visionQuantization = s.value(kVisionQuantization, d.visionQuantization).toString();
    v.gpuMemoryUtilization = s.value(kGpuMemory, d.gpuMemoryUtilization).toDouble();
    v.maxModelLen = s.value(kMaxModelLen, d.maxModelLen).toInt();
    v.maxNumSeqs = s.value(kMaxNumSeqs, d.maxNumSeqs).toInt();
    v.maxNumBatchedTokens = s.value(kMaxBatchedTokens, d.maxNumBatchedTokens).toInt();
    v.enablePrefixCaching = s.value(kPrefixCaching, d.enablePrefixCaching).toBool();
    v.kvCacheDtype = s.value(kKvCacheDtype, d.kvCacheDtype).toString();
    v.renderDpi = s.value(kDpi, d.renderDpi).toInt();
    const QVariantMap thresholds = s.value(kThresholds).toMap();
    for (auto it = thresholds.begin(); it != thresholds.end(); ++it) {
        v.layoutThresholds.insert(it.key(), it.value().toDouble());
    }
    if (s.contains(kMarkdownLabels)) {
        v.markdownLabels = sorted(s.value(kMarkdownLabels).toStringList());
    }
    if (s.contains(kExportFormats)) {
        v.exportFormats = s.value(kExportFormats).toStringList();
    }
    v.language = s.value(kLanguage, d.language).toString();
    // A file edited by hand to something out of range falls back to the defaults rather than failing later.
    values_ = validate(v).isEmpty() ? v : d;
}

void Settings::store(const SettingsValues& v) {
    QSettings& s = *store_;
    s.setValue(kModel, v.model);
    s.setValue(kLayoutModel, v.layoutModel);
    s.setValue(kChatModel, v.chatModel);
    s.setValue(kDevice, v.device);
    s.setValue(kTensorParallel, v.tensorParallel);
    s.setValue(kQuantization, v.quantization);
    s.setValue(kVisionQuantization, v.visionQuantization);
    s.setValue(kGpuMemory, v.gpuMemoryUtilization);
    s.setValue(kMaxModelLen, v.maxModelLen);
    s.setValue(kMaxNumSeqs, v.maxNumSeqs);
    s.setValue(kMaxBatchedTokens, v.maxNumBatchedTokens);
    s.setValue(kPrefixCaching, v.enablePrefixCaching);
    s.setValue(kKvCacheDtype, v.kvCacheDtype);
    s.setValue(kDpi, v.renderDpi);
    QVariantMap thresholds;
    for (auto it = v.layoutThresholds.begin(); it != v.layoutThresholds.end(); ++it) {
        thresholds.insert(it.key(), it.value());
    }
    s.setValue(kThresholds, thresholds);
    s.setValue(kMarkdownLabels, v.markdownLabels);
    s.setValue(kExportFormats, v.exportFormats);
    s.setValue(kLanguage, v.language);
    s.sync();
}

QList<SettingsProblem> Settings::validate(const SettingsValues& v, std::optional<int64_t> modelContext) {
    QList<SettingsProblem> problems;
    const auto add = [&](const char* key, const QString& message) {
        problems.append({QString::fromLatin1(key), message});
    };
    const QString model = v.model.trimmed();
    if (!model.isEmpty() && !QFileInfo(model).isDir() && !hub::is_repo_id(model.toStdString())) {
        add(kModel, tr("Model: \"%1\" is neither a folder nor a Hub repository (ORG/NAME)").arg(model));
    }
    const QString layout = v.layoutModel.trimmed();
    if (!layout.isEmpty() && !QFileInfo(layout).isDir() && !hub::is_repo_id(layout.toStdString())) {
        add(kLayoutModel,
            tr("Layout model: \"%1\" is neither a folder nor a Hub repository (ORG/NAME)").arg(layout));
    }
    const QString chat = v.chatModel.trimmed();
    if (!chat.isEmpty() && !QFileInfo(chat).isDir() && !hub::is_repo_id(chat.toStdString())) {
        add(kChatModel,
            tr("Chat model: \"%1\" is neither a folder nor a Hub repository (ORG/NAME)").arg(chat));
    }
    if (v.visionQuantization != QLatin1String("none") && v.visionQuantization != QLatin1String("fp8")) {
        add(kVisionQuantization,
            tr("Vision encoder: expected none or fp8, got \"%1\"").arg(v.visionQuantization));
    } else if (v.visionQuantization == QLatin1String("fp8") && v.device == QLatin1String("cpu")) {
        add(kVisionQuantization,
            tr("Vision encoder: FP8 runs on a GPU of compute capability 8.9 or later, not on the CPU"));
    }
    if (v.tensorParallel && isDevice(v.device) && cardCount(v.device) < 2) {
        add(kTensorParallel,
            tr("Tensor parallelism splits each model over several cards; choose two or more"));
    }
    if (!isDevice(v.device)) {
        add(kDevice, tr("Device: expected cpu, cuda:N or cuda:N,cuda:M,…, got \"%1\"").arg(v.device));
    } else {
        ModelDescription described;
        described.max_context = modelContext.value_or(kUnknownContext);
        try {
            cli::engine_options_from_values(engineValues(v), described, v.device.toStdString());
        } catch (const Error& e) {
            const QString message = QString::fromStdString(e.what());
            problems.append({keyOfEngineMessage(message), message});
        }
    }
    if (v.renderDpi < kMinDpi || v.renderDpi > kMaxDpi) {
        add(kDpi,
            tr("Rendering DPI must be between %1 and %2, got %3").arg(kMinDpi).arg(kMaxDpi).arg(v.renderDpi));
    }
    const QStringList labels = layoutLabels();
    for (auto it = v.layoutThresholds.begin(); it != v.layoutThresholds.end(); ++it) {
        if (!labels.contains(it.key())) {
            add(kThresholds, tr("Layout threshold: unknown label \"%1\"").arg(it.key()));
        } else if (!(it.value() >= 0.0 && it.value() <= 1.0)) {
            add(kThresholds,
                tr("Layout threshold of %1 must be between 0 and 1, got %2").arg(it.key()).arg(it.value()));
        }
    }
    for (const QString& label : v.markdownLabels) {
        if (!labels.contains(label)) {
            add(kMarkdownLabels, tr("Markdown labels: unknown label \"%1\"").arg(label));
        }
    }
    if (v.exportFormats.isEmpty()) {
        add(kExportFormats, tr("Export: choose at least one format"));
    }
    for (const QString& format : v.exportFormats) {
        if (!exportFormatNames().contains(format)) {
            add(kExportFormats,
                tr("Export: unknown format \"%1\" (expected md, json, html, pdf, xlsx or docx)").arg(format));
        }
    }
    if (!v.language.isEmpty() && !languages().contains(v.language)) {
        add(kLanguage, tr("Language: expected en or zh_CN, got \"%1\"").arg(v.language));
    }
    return problems;
}

QStringList Settings::changedKeys(const SettingsValues& a, const SettingsValues& b) {
    QStringList keys;
    const auto check = [&](bool differs, const char* key) {
        if (differs) {
            keys << QString::fromLatin1(key);
        }
    };
    check(a.model != b.model, kModel);
    check(a.layoutModel != b.layoutModel, kLayoutModel);
    check(a.chatModel != b.chatModel, kChatModel);
    check(a.device != b.device, kDevice);
    check(a.tensorParallel != b.tensorParallel, kTensorParallel);
    check(a.quantization != b.quantization, kQuantization);
    check(a.visionQuantization != b.visionQuantization, kVisionQuantization);
    check(a.gpuMemoryUtilization != b.gpuMemoryUtilization, kGpuMemory);
    check(a.maxModelLen != b.maxModelLen, kMaxModelLen);
    check(a.maxNumSeqs != b.maxNumSeqs, kMaxNumSeqs);
    check(a.maxNumBatchedTokens != b.maxNumBatchedTokens, kMaxBatchedTokens);
    check(a.enablePrefixCaching != b.enablePrefixCaching, kPrefixCaching);
    check(a.kvCacheDtype != b.kvCacheDtype, kKvCacheDtype);
    check(a.renderDpi != b.renderDpi, kDpi);
    check(a.layoutThresholds != b.layoutThresholds, kThresholds);
    check(sorted(a.markdownLabels) != sorted(b.markdownLabels), kMarkdownLabels);
    check(a.exportFormats != b.exportFormats, kExportFormats);
    check(a.language != b.language, kLanguage);
    return keys;
}

EngineImpact Settings::impactOf(const SettingsValues& before, const SettingsValues& after) {
    EngineImpact impact = EngineImpact::None;
    for (const QString& key : changedKeys(before, after)) {
        if (key == QLatin1String(kModel) || key == QLatin1String(kLayoutModel) ||
            key == QLatin1String(kChatModel) || key == QLatin1String(kDevice) ||
            key == QLatin1String(kTensorParallel) || key == QLatin1String(kQuantization) ||
            key == QLatin1String(kVisionQuantization)) {
            return EngineImpact::Reload;
        }
        if (key.startsWith(QLatin1String("engine/"))) {
            impact = EngineImpact::Reconfigure;
        }
    }
    return impact;
}

QList<SettingsProblem> Settings::apply(const SettingsValues& values, std::optional<int64_t> modelContext) {
    SettingsValues v = values;
    v.markdownLabels = sorted(v.markdownLabels);
    v.model = v.model.trimmed();
    v.layoutModel = v.layoutModel.trimmed();
    v.chatModel = v.chatModel.trimmed();
    const QList<SettingsProblem> problems = validate(v, modelContext);
    if (!problems.isEmpty()) {
        return problems;
    }
    const QStringList keys = changedKeys(values_, v);
    const EngineImpact impact = impactOf(values_, v);
    const bool languageChange = values_.language != v.language;
    values_ = v;
    store(v);
    if (!keys.isEmpty()) {
        Q_EMIT changed(keys, impact);
    }
    if (languageChange) {
        Q_EMIT languageChanged(v.language);
    }
    return {};
}

cli::EngineOptions Settings::engineOptions(const SettingsValues& values, const ModelDescription& model) {
    return cli::engine_options_from_values(engineValues(values), model, values.device.toStdString());
}

ServiceParams Settings::serviceParams(const SettingsValues& values, const std::filesystem::path& modelDir,
                                      const std::optional<std::filesystem::path>& layoutDir, int cpuThreads,
                                      const std::optional<std::filesystem::path>& chatDir, QString* note) {
    const ModelDescription described = describe_model(modelDir);
    SettingsValues checked = values;
    if (described.max_context > 0 && checked.maxModelLen > described.max_context) {
        // A context length beyond the model's would refuse the load: the model's own is taken, and said.
        if (note != nullptr) {
            *note =
                tr("The context length (Settings > Engine > Context length) is %1 tokens; the model was made "
                   "for %2, which the engine uses")
                    .arg(checked.maxModelLen)
                    .arg(described.max_context);
        }
        checked.maxModelLen = static_cast<int>(described.max_context);
    }
    const cli::EngineOptions options = engineOptions(checked, described);
    const std::string device = values.device.toStdString();
    ServiceParams params;
    std::string flag = (device.find(',') == std::string::npos ? "--device=" : "--devices=") + device;
    std::string threads = "--threads=" + std::to_string(cpuThreads);
    // Several cards: an engine on each, or one engine whose ranks split each model over all of them.
    std::string ranks =
        "--tensor-parallel-size=" + std::to_string(values.tensorParallel ? cardCount(values.device) : 1);
    char* argv[] = {flag.data(), threads.data(), ranks.data()};
    cli::set_service_devices(params, cli::Options(3, argv, 0));
    ModelSlot recognition{ModelRole::Recognition, modelDir, options.load};
    recognition.adjust_preprocessor = [options](PreprocessorConfig& pre) {
        cli::apply_preprocessing(options, pre);
    };
    params.models.push_back(std::move(recognition));
    if (chatDir) {
        // The same weight quantization; the engine plans both caches together and gives each model the
        // context length up to its own.
        params.models.push_back({ModelRole::Chat, *chatDir, options.load});
    }
    if (layoutDir) {
        ModelSlot layout{ModelRole::Layout, *layoutDir, {}};
        layout.layout_precision = options.layout_precision;
        params.models.push_back(std::move(layout));
    }
    params.engine = options.engine;
    return params;
}

}  // namespace folio
