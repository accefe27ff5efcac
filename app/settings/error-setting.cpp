#include "app/settings/error-setting.h"

#include <QList>
#include <QRegularExpression>
#include <stdexcept>
#include <utility>

#include "engine/common/failure.h"

namespace folio {

QString settingForEngineError(const QString& message, EngineErrorSource source, const QString& layoutFolder) {
    if (message.trimmed().isEmpty()) {
        return {};
    }
    // The engine's own reading of a failure's text (CUDA's errors, out of memory), then what the planner and
    // the loaders say in words.
    const ErrorKind kind = classify_failure(std::runtime_error(message.toStdString()));
    const auto has = [&](const char* text) {
        return message.contains(QLatin1String(text), Qt::CaseInsensitive);
    };
    // An option named by its FastDeploy name (or its flag, --max-num-seqs) is that option's.
    if (has("max_model_len") || has("max-model-len") || has("context length")) {
        return QLatin1String(setting_key::kContextLength);
    }
    if (has("max_num_batched_tokens") || has("max-num-batched-tokens")) {
        return QLatin1String(setting_key::kBatchedTokens);
    }
    if (has("kv_cache_dtype") || has("kv-cache-dtype")) {
        return QLatin1String(setting_key::kKvCache);
    }
    if (has("max_num_seqs") || has("max-num-seqs")) {
        return QLatin1String(setting_key::kSequences);
    }
    if (kind == ErrorKind::OutOfMemory || has("not enough memory") || has("gpu_memory_utilization") ||
        has("gpu-memory-utilization") || has("bad_alloc") || has("cannot allocate")) {
        return QLatin1String(setting_key::kGpuMemory);
    }
    if (has("tensor-parallel") || has("tensor_parallel")) {
        return QLatin1String(setting_key::kTensorParallel);
    }
    if (has("quantize-vision") || has("quantize_vision") || has("FP8")) {
        return QLatin1String(setting_key::kVisionQuantization);
    }
    if (has("quantization") || has("wint8") || has("wint4")) {
        return QLatin1String(setting_key::kQuantization);
    }
    if (kind == ErrorKind::DeviceLost || has("cuda") || has("no device")) {
        return QLatin1String(setting_key::kDevice);
    }
    // The layout folder named as itself or as the folder of a file, not as the start of another name.
    const bool namesLayoutFolder =
        !layoutFolder.isEmpty() &&
        message.contains(
            QRegularExpression(QRegularExpression::escape(layoutFolder) + QStringLiteral("(?![\\w.-])")));
    if (has("no layout model") || namesLayoutFolder) {
        return QLatin1String(setting_key::kLayoutModel);
    }
    if (has("load a model") || has("no model") || has("model is not loaded")) {
        return QLatin1String(setting_key::kModel);
    }
    switch (source) {
        case EngineErrorSource::Loading:
            if (has("layout model")) {
                return QLatin1String(setting_key::kLayoutModel);
            }
            return QLatin1String(setting_key::kModel);
        case EngineErrorSource::Reconfiguring:
            return QLatin1String(setting_key::kGpuMemory);  // the Engine page, whose options were applied
        case EngineErrorSource::Running:
            return {};
    }
    return {};
}

QString settingForProblemKey(const QString& settingsKey) {
    using namespace setting_key;
    static const QList<std::pair<QLatin1String, const char*>> kKeys = {
        {QLatin1String("models/recognition"), kModel},
        {QLatin1String("models/layout"), kLayoutModel},
        {QLatin1String("models/chat"), kChatModel},
        {QLatin1String("engine/device"), kDevice},
        {QLatin1String("engine/tensor_parallel"), kTensorParallel},
        {QLatin1String("engine/quantization"), kQuantization},
        {QLatin1String("engine/quantize_vision"), kVisionQuantization},
        {QLatin1String("engine/gpu_memory_utilization"), kGpuMemory},
        {QLatin1String("engine/max_model_len"), kContextLength},
        {QLatin1String("engine/max_num_seqs"), kSequences},
        {QLatin1String("engine/max_num_batched_tokens"), kBatchedTokens},
        {QLatin1String("engine/kv_cache_dtype"), kKvCache},
    };
    for (const auto& [key, field] : kKeys) {
        if (settingsKey == key) {
            return QLatin1String(field);
        }
    }
    return {};
}

}  // namespace folio
