// The settings dialog over the app's Settings: language; model, layout model, device and quantization; the
// engine's FastDeploy options; documents (rendering DPI, which labels reach the Markdown and their layout
// thresholds); export formats. Apply checks every value as folio-cli checks its options and shows what is
// wrong with its range; what the engine must do about a change comes through Settings::changed.
#pragma once

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QMap>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <optional>

#include "app/settings/compute-devices.h"
#include "app/settings/settings.h"

namespace folio {

class SettingsDialog : public QDialog {
    Q_OBJECT

public:
    explicit SettingsDialog(Settings& settings, QWidget* parent = nullptr);
    ~SettingsDialog() override;

    // The devices offered (computeDevices() by default).
    void setDevices(const QList<ComputeDevice>& devices);
    // The loaded model's context length, that max_model_len may not exceed.
    void setModelContext(std::optional<int64_t> context);
    // The models loaded now (their names; empty: none), which the empty model fields say they stand for.
    void setLoadedModels(const QString& recognition, const QString& chat);
    // A model folder or repository chosen elsewhere (the model manager).
    void setModel(const QString& model);

    // What the widgets hold now.
    SettingsValues values() const;
    void setValues(const SettingsValues& values);
    // Applies the widgets' values; false (with the problems shown) when any is wrong.
    bool apply();
    // The problems the last apply() showed.
    QString problemText() const { return problems_->text(); }

    QTabWidget* tabs() const { return tabs_; }
    // Shows the page of one setting (a key of app/settings/error-setting.h: "model", "gpu", ...) with its
    // field focused and its name marked, for a problem that setting may fix; false for a key it does not
    // know.
    bool showSetting(const QString& key);
    // The field of a setting's key; null for a key it does not know.
    QWidget* settingField(const QString& key) const;

Q_SIGNALS:
    // "Manage models…": the app opens the model manager and calls setModel() with the choice.
    void manageModelsRequested();
    // The model manager on the chat models (the chat model's button).
    void manageChatModelsRequested();

protected:
    void changeEvent(QEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void retranslate();
    QWidget* buildGeneral();
    QWidget* buildModel();
    QWidget* buildEngine();
    QWidget* buildDocuments();
    QWidget* buildExport();
    void showProblems(const QList<SettingsProblem>& problems);
    void updateNote();
    void restoreDefaults();

    Settings& settings_;
    std::optional<int64_t> modelContext_;
    QString loadedModel_;
    QString loadedChatModel_;
    QString shownSetting_;  // the setting showSetting() marked
    // Thresholds typed in the labels table that are not numbers.
    mutable QStringList badThresholds_;

    QTabWidget* tabs_;
    QLabel* problems_;
    QLabel* note_;
    QDialogButtonBox* buttons_;
    QMap<QString, QLabel*> labels_;  // every form label, retranslated by key

    QComboBox* language_;
    QLineEdit* model_;
    QPushButton* browseModel_;
    QPushButton* manageModels_;
    QLineEdit* layoutModel_;
    QLineEdit* chatModel_;
    QPushButton* browseChatModel_;
    QPushButton* manageChatModels_;
    QComboBox* device_;
    QComboBox* quantization_;
    QComboBox* visionQuantization_;
    QCheckBox* tensorParallel_;
    QDoubleSpinBox* gpuMemory_;
    QSpinBox* maxModelLen_;
    QSpinBox* maxNumSeqs_;
    QSpinBox* maxBatchedTokens_;
    QCheckBox* prefixCaching_;
    QComboBox* kvCacheDtype_;
    QSpinBox* dpi_;
    QTableWidget* labelTable_;
    QLabel* labelHint_;
    QMap<QString, QCheckBox*> formats_;
    QLabel* engineHint_;
};

}  // namespace folio
