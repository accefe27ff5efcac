// The setting an engine error calls for, so that the app can offer to open it where the error is shown: the
// key of the settings dialog's field (SettingsDialog::showSetting), from the error's text and where it came
// from. A model that is missing, does not load or is not a model folder calls for the model (or the layout
// model, where the error names its folder); running out of memory for the GPU memory utilization (the KV
// cache's share, beside the batch sizes and quantization on their pages); a lost or missing device for the
// device; an option's FastDeploy name in the text for that option.
#pragma once

#include <QString>

namespace folio {

// The settings dialog's field keys.
namespace setting_key {
inline constexpr char kModel[] = "model";
inline constexpr char kLayoutModel[] = "layout";
inline constexpr char kChatModel[] = "chat";
inline constexpr char kDevice[] = "device";
inline constexpr char kTensorParallel[] = "tp";
inline constexpr char kQuantization[] = "quantization";
inline constexpr char kVisionQuantization[] = "vision";
inline constexpr char kGpuMemory[] = "gpu";
inline constexpr char kContextLength[] = "len";
inline constexpr char kSequences[] = "seqs";
inline constexpr char kBatchedTokens[] = "batched";
inline constexpr char kKvCache[] = "kvcache";
}  // namespace setting_key

enum class EngineErrorSource {
    Loading,        // loading the models (or finding them): every failure is about a setting
    Reconfiguring,  // rebuilding the engine with other options: the engine's settings
    Running,        // a document's page or block, a chat turn: only memory and the device are settings
};

// The key of the setting the error calls for; empty where none does (a bad page of a PDF, ...). layoutFolder:
// the layout model's folder, which loading errors name when it is the one at fault.
QString settingForEngineError(const QString& message, EngineErrorSource source,
                              const QString& layoutFolder = {});

// The field key of a settings problem's key (SettingsProblem::key, "engine/max_num_seqs"); empty for a
// setting the dialog has no field key for.
QString settingForProblemKey(const QString& settingsKey);

}  // namespace folio
