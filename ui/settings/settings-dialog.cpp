#include "ui/settings/settings-dialog.h"

#include <QEvent>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QShowEvent>
#include <QVBoxLayout>

#include "app/i18n/translation-loader.h"
#include "app/settings/error-setting.h"

namespace folio {

namespace {

constexpr int kLabelColumn = 0;
constexpr int kThresholdColumn = 1;

// A form row's label: the setting's name and, under it in grey, FastDeploy's option name and range.
QLabel* formLabel(QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setTextFormat(Qt::RichText);
    return label;
}

QString withOption(const QString& name, const QString& option) {
    return QStringLiteral("%1<br><span style=\"color:gray; font-size:small\">%2</span>")
        .arg(name.toHtmlEscaped(), option.toHtmlEscaped());
}

}  // namespace

SettingsDialog::SettingsDialog(Settings& settings, QWidget* parent)
    : QDialog(parent),
      settings_(settings),
      tabs_(new QTabWidget(this)),
      problems_(new QLabel(this)),
      note_(new QLabel(this)),
      buttons_(new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Apply |
                                        QDialogButtonBox::Cancel | QDialogButtonBox::RestoreDefaults,
                                    this)) {
    tabs_->addTab(buildGeneral(), QString());
    tabs_->addTab(buildModel(), QString());
    tabs_->addTab(buildEngine(), QString());
    tabs_->addTab(buildDocuments(), QString());
    tabs_->addTab(buildExport(), QString());
    problems_->setWordWrap(true);
    problems_->setStyleSheet(QStringLiteral("color: #b00020;"));
    problems_->setVisible(false);
    note_->setWordWrap(true);
    note_->setStyleSheet(QStringLiteral("color: palette(mid);"));

    connect(buttons_, &QDialogButtonBox::accepted, this, [this] {
        if (apply()) {
            accept();
        }
    });
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(buttons_->button(QDialogButtonBox::Apply), &QPushButton::clicked, this, &SettingsDialog::apply);
    connect(buttons_->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this,
            &SettingsDialog::restoreDefaults);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(tabs_, 1);
    layout->addWidget(problems_);
    layout->addWidget(note_);
    layout->addWidget(buttons_);

    setDevices(computeDevices());
    retranslate();
    setValues(settings_.values());
    resize(640, 560);
}

SettingsDialog::~SettingsDialog() {
    // A field that has the focus loses it as the dialog goes (editingFinished), after its members are gone:
    // nothing of the dialog may answer it then.
    for (QWidget* field : findChildren<QWidget*>()) {
        field->disconnect(this);
    }
}

QWidget* SettingsDialog::settingField(const QString& key) const {
    using namespace setting_key;
    const QMap<QString, QWidget*> fields = {
        {QLatin1String(kModel), model_},
        {QLatin1String(kLayoutModel), layoutModel_},
        {QLatin1String(kChatModel), chatModel_},
        {QLatin1String(kDevice), device_},
        {QLatin1String(kTensorParallel), tensorParallel_},
        {QLatin1String(kQuantization), quantization_},
        {QLatin1String(kVisionQuantization), visionQuantization_},
        {QLatin1String(kGpuMemory), gpuMemory_},
        {QLatin1String(kContextLength), maxModelLen_},
        {QLatin1String(kSequences), maxNumSeqs_},
        {QLatin1String(kBatchedTokens), maxBatchedTokens_},
        {QLatin1String(kKvCache), kvCacheDtype_},
    };
    return fields.value(key, nullptr);
}

bool SettingsDialog::showSetting(const QString& key) {
    QWidget* field = settingField(key);
    if (field == nullptr) {
        return false;
    }
    for (int i = 0; i < tabs_->count(); ++i) {
        if (tabs_->widget(i)->isAncestorOf(field)) {
            tabs_->setCurrentIndex(i);
        }
    }
    if (QLabel* old = labels_.value(shownSetting_, nullptr)) {
        old->setStyleSheet(QString());
    }
    shownSetting_ = key;
    // The setting's name marked, so that it is found at a glance.
    if (QLabel* label = labels_.value(key, nullptr)) {
        label->setStyleSheet(
            QStringLiteral("background-color: #fff1b8; border-radius: 3px; padding: 2px 4px;"));
    }
    if (isVisible()) {
        field->setFocus(Qt::OtherFocusReason);
    }
    return true;
}

void SettingsDialog::showEvent(QShowEvent* event) {
    QDialog::showEvent(event);
    if (QWidget* field = settingField(shownSetting_)) {
        field->setFocus(Qt::OtherFocusReason);
    }
}

QWidget* SettingsDialog::buildGeneral() {
    auto* page = new QWidget(this);
    auto* form = new QFormLayout(page);
    language_ = new QComboBox(page);
    language_->addItem(QString(), QString());
    for (const QString& language : TranslationLoader::availableLanguages()) {
        language_->addItem(TranslationLoader::nativeName(language), language);
    }
    labels_[QStringLiteral("language")] = formLabel(page);
    form->addRow(labels_[QStringLiteral("language")], language_);
    connect(language_, &QComboBox::currentIndexChanged, this, &SettingsDialog::updateNote);
    return page;
}

QWidget* SettingsDialog::buildModel() {
    auto* page = new QWidget(this);
    auto* form = new QFormLayout(page);
    model_ = new QLineEdit(page);
    browseModel_ = new QPushButton(page);
    manageModels_ = new QPushButton(page);
    auto* modelRow = new QHBoxLayout;
    modelRow->addWidget(model_, 1);
    modelRow->addWidget(browseModel_);
    modelRow->addWidget(manageModels_);
    layoutModel_ = new QLineEdit(page);
    // The chat model, beside the OCR model, with the same choices.
    chatModel_ = new QLineEdit(page);
    chatModel_->setObjectName(QStringLiteral("chatModel"));
    model_->setObjectName(QStringLiteral("model"));
    browseChatModel_ = new QPushButton(page);
    manageChatModels_ = new QPushButton(page);
    auto* chatRow = new QHBoxLayout;
    chatRow->addWidget(chatModel_, 1);
    chatRow->addWidget(browseChatModel_);
    chatRow->addWidget(manageChatModels_);
    device_ = new QComboBox(page);
    quantization_ = new QComboBox(page);
    for (const char* q : {"none", "wint8", "wint4"}) {
        quantization_->addItem(QString(), QString::fromLatin1(q));
    }
    // With several cards: each model split over them rather than a copy on each.
    tensorParallel_ = new QCheckBox(page);
    tensorParallel_->setObjectName(QStringLiteral("tensorParallel"));
    visionQuantization_ = new QComboBox(page);
    visionQuantization_->setObjectName(QStringLiteral("visionQuantization"));
    for (const char* q : {"none", "fp8"}) {
        visionQuantization_->addItem(QString(), QString::fromLatin1(q));
    }
    for (const char* key : {"model", "layout", "chat", "device", "quantization", "vision"}) {
        labels_[QString::fromLatin1(key)] = formLabel(page);
    }
    form->addRow(labels_[QStringLiteral("model")], modelRow);
    form->addRow(labels_[QStringLiteral("layout")], layoutModel_);
    form->addRow(labels_[QStringLiteral("chat")], chatRow);
    form->addRow(labels_[QStringLiteral("device")], device_);
    form->addRow(QString(), tensorParallel_);
    form->addRow(labels_[QStringLiteral("quantization")], quantization_);
    form->addRow(labels_[QStringLiteral("vision")], visionQuantization_);
    connect(browseModel_, &QPushButton::clicked, this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Choose a model folder"), model_->text());
        if (!dir.isEmpty()) {
            model_->setText(dir);
        }
    });
    connect(browseChatModel_, &QPushButton::clicked, this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Choose a chat model folder"), chatModel_->text());
        if (!dir.isEmpty()) {
            chatModel_->setText(dir);
        }
    });
    connect(manageModels_, &QPushButton::clicked, this, &SettingsDialog::manageModelsRequested);
    connect(manageChatModels_, &QPushButton::clicked, this, &SettingsDialog::manageChatModelsRequested);
    for (QLineEdit* edit : {model_, layoutModel_, chatModel_}) {
        connect(edit, &QLineEdit::textChanged, this, &SettingsDialog::updateNote);
    }
    for (QComboBox* combo : {device_, quantization_, visionQuantization_}) {
        connect(combo, &QComboBox::currentIndexChanged, this, &SettingsDialog::updateNote);
    }
    connect(tensorParallel_, &QCheckBox::toggled, this, &SettingsDialog::updateNote);
    // Splitting needs several cards.
    connect(device_, &QComboBox::currentIndexChanged, this, [this] {
        tensorParallel_->setEnabled(device_->currentData().toString().contains(QLatin1Char(',')));
    });
    // A device change brings its default number of sequences, as a fresh start would.
    connect(device_, &QComboBox::activated, this, [this] {
        maxNumSeqs_->setValue(Settings::defaults(device_->currentData().toString()).maxNumSeqs);
    });
    return page;
}

QWidget* SettingsDialog::buildEngine() {
    auto* page = new QWidget(this);
    auto* form = new QFormLayout(page);
    gpuMemory_ = new QDoubleSpinBox(page);
    gpuMemory_->setDecimals(2);
    gpuMemory_->setRange(0.05, 1.0);
    gpuMemory_->setSingleStep(0.05);
    maxModelLen_ = new QSpinBox(page);
    maxModelLen_->setRange(0, 1 << 20);  // 0: automatic
    maxModelLen_->setSingleStep(1024);
    maxNumSeqs_ = new QSpinBox(page);
    maxNumSeqs_->setRange(1, 256);
    maxBatchedTokens_ = new QSpinBox(page);
    maxBatchedTokens_->setRange(1, 1 << 24);
    maxBatchedTokens_->setSingleStep(512);
    prefixCaching_ = new QCheckBox(page);
    kvCacheDtype_ = new QComboBox(page);
    kvCacheDtype_->setObjectName(QStringLiteral("kvCacheDtype"));
    for (const char* dtype : {"auto", "int8"}) {
        kvCacheDtype_->addItem(QString(), QString::fromLatin1(dtype));
    }
    for (const char* key : {"gpu", "len", "seqs", "batched", "prefix", "kvcache"}) {
        labels_[QString::fromLatin1(key)] = formLabel(page);
    }
    form->addRow(labels_[QStringLiteral("gpu")], gpuMemory_);
    form->addRow(labels_[QStringLiteral("len")], maxModelLen_);
    form->addRow(labels_[QStringLiteral("seqs")], maxNumSeqs_);
    form->addRow(labels_[QStringLiteral("batched")], maxBatchedTokens_);
    form->addRow(labels_[QStringLiteral("prefix")], prefixCaching_);
    form->addRow(labels_[QStringLiteral("kvcache")], kvCacheDtype_);
    engineHint_ = new QLabel(page);
    engineHint_->setWordWrap(true);
    engineHint_->setStyleSheet(QStringLiteral("color: palette(mid);"));
    form->addRow(engineHint_);
    for (QAbstractSpinBox* spin :
         std::initializer_list<QAbstractSpinBox*>{gpuMemory_, maxModelLen_, maxNumSeqs_, maxBatchedTokens_}) {
        connect(spin, &QAbstractSpinBox::editingFinished, this, &SettingsDialog::updateNote);
    }
    connect(prefixCaching_, &QCheckBox::toggled, this, &SettingsDialog::updateNote);
    connect(kvCacheDtype_, &QComboBox::currentIndexChanged, this, &SettingsDialog::updateNote);
    return page;
}

QWidget* SettingsDialog::buildDocuments() {
    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    auto* form = new QFormLayout;
    dpi_ = new QSpinBox(page);
    dpi_->setRange(18, 2400);
    dpi_->setSingleStep(50);
    labels_[QStringLiteral("dpi")] = formLabel(page);
    form->addRow(labels_[QStringLiteral("dpi")], dpi_);
    layout->addLayout(form);
    labelHint_ = new QLabel(page);
    labelHint_->setWordWrap(true);
    layout->addWidget(labelHint_);
    const QStringList labels = Settings::layoutLabels();
    labelTable_ = new QTableWidget(static_cast<int>(labels.size()), 2, page);
    labelTable_->verticalHeader()->setVisible(false);
    labelTable_->verticalHeader()->setDefaultSectionSize(labelTable_->fontMetrics().height() + 8);
    labelTable_->horizontalHeader()->setSectionResizeMode(kLabelColumn, QHeaderView::Stretch);
    labelTable_->horizontalHeader()->setSectionResizeMode(kThresholdColumn, QHeaderView::ResizeToContents);
    labelTable_->setSelectionMode(QAbstractItemView::NoSelection);
    for (int row = 0; row < labels.size(); ++row) {
        auto* label = new QTableWidgetItem(labels[row]);
        label->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
        labelTable_->setItem(row, kLabelColumn, label);
        labelTable_->setItem(row, kThresholdColumn, new QTableWidgetItem);
    }
    layout->addWidget(labelTable_, 1);
    return page;
}

QWidget* SettingsDialog::buildExport() {
    auto* page = new QWidget(this);
    auto* layout = new QVBoxLayout(page);
    for (const QString& format : Settings::exportFormatNames()) {
        auto* box = new QCheckBox(page);
        formats_[format] = box;
        layout->addWidget(box);
    }
    layout->addStretch(1);
    return page;
}

void SettingsDialog::setDevices(const QList<ComputeDevice>& devices) {
    const QString current = device_->currentData().toString();
    device_->clear();
    for (const ComputeDevice& device : devices) {
        device_->addItem(device.name, device.id);
    }
    const int index = device_->findData(current);
    if (index >= 0) {
        device_->setCurrentIndex(index);
    }
}

void SettingsDialog::setModelContext(std::optional<int64_t> context) {
    modelContext_ = context;
    retranslate();
}

void SettingsDialog::setLoadedModels(const QString& recognition, const QString& chat) {
    loadedModel_ = recognition;
    loadedChatModel_ = chat;
    retranslate();
}

void SettingsDialog::setModel(const QString& model) {
    model_->setText(model);
}

SettingsValues SettingsDialog::values() const {
    SettingsValues v = settings_.values();
    v.language = language_->currentData().toString();
    v.model = model_->text().trimmed();
    v.layoutModel = layoutModel_->text().trimmed();
    v.chatModel = chatModel_->text().trimmed();
    v.device = device_->currentData().toString();
    v.tensorParallel = tensorParallel_->isChecked();
    v.quantization = quantization_->currentData().toString();
    v.visionQuantization = visionQuantization_->currentData().toString();
    v.gpuMemoryUtilization = gpuMemory_->value();
    v.maxModelLen = maxModelLen_->value();
    v.maxNumSeqs = maxNumSeqs_->value();
    v.maxNumBatchedTokens = maxBatchedTokens_->value();
    v.enablePrefixCaching = prefixCaching_->isChecked();
    v.kvCacheDtype = kvCacheDtype_->currentData().toString();
    v.renderDpi = dpi_->value();
    v.markdownLabels.clear();
    v.layoutThresholds.clear();
    badThresholds_.clear();
    for (int row = 0; row < labelTable_->rowCount(); ++row) {
        const QString label = labelTable_->item(row, kLabelColumn)->text();
        if (labelTable_->item(row, kLabelColumn)->checkState() == Qt::Checked) {
            v.markdownLabels << label;
        }
        const QString text = labelTable_->item(row, kThresholdColumn)->text().trimmed();
        if (!text.isEmpty()) {
            bool ok = false;
            const double threshold = QLocale().toDouble(text, &ok);
            const double plain = ok ? threshold : text.toDouble(&ok);
            if (ok) {
                v.layoutThresholds.insert(label, plain);
            } else {
                badThresholds_ << label;
            }
        }
    }
    v.exportFormats.clear();
    for (const QString& format : Settings::exportFormatNames()) {
        if (formats_[format]->isChecked()) {
            v.exportFormats << format;
        }
    }
    return v;
}

void SettingsDialog::setValues(const SettingsValues& v) {
    language_->setCurrentIndex(std::max(0, language_->findData(v.language)));
    model_->setText(v.model);
    layoutModel_->setText(v.layoutModel);
    chatModel_->setText(v.chatModel);
    int device = device_->findData(v.device);
    if (device < 0) {
        // A device no longer present keeps its place in the list, so that the value is not lost silently.
        device_->addItem(tr("%1 (not found)").arg(v.device), v.device);
        device = device_->count() - 1;
    }
    device_->setCurrentIndex(device);
    tensorParallel_->setChecked(v.tensorParallel);
    tensorParallel_->setEnabled(v.device.contains(QLatin1Char(',')));
    quantization_->setCurrentIndex(std::max(0, quantization_->findData(v.quantization)));
    visionQuantization_->setCurrentIndex(std::max(0, visionQuantization_->findData(v.visionQuantization)));
    gpuMemory_->setValue(v.gpuMemoryUtilization);
    maxModelLen_->setValue(v.maxModelLen);
    maxNumSeqs_->setValue(v.maxNumSeqs);
    maxBatchedTokens_->setValue(v.maxNumBatchedTokens);
    prefixCaching_->setChecked(v.enablePrefixCaching);
    kvCacheDtype_->setCurrentIndex(std::max(0, kvCacheDtype_->findData(v.kvCacheDtype)));
    dpi_->setValue(v.renderDpi);
    for (int row = 0; row < labelTable_->rowCount(); ++row) {
        const QString label = labelTable_->item(row, kLabelColumn)->text();
        labelTable_->item(row, kLabelColumn)
            ->setCheckState(v.markdownLabels.contains(label) ? Qt::Checked : Qt::Unchecked);
        labelTable_->item(row, kThresholdColumn)
            ->setText(v.layoutThresholds.contains(label) ? QLocale().toString(v.layoutThresholds[label])
                                                         : QString());
    }
    for (auto it = formats_.begin(); it != formats_.end(); ++it) {
        it.value()->setChecked(v.exportFormats.contains(it.key()));
    }
    problems_->setVisible(false);
    updateNote();
}

bool SettingsDialog::apply() {
    const SettingsValues v = values();
    QList<SettingsProblem> problems;
    for (const QString& label : badThresholds_) {
        problems.append({QStringLiteral("documents/layout_thresholds"),
                         tr("Layout threshold of %1 must be a number between 0 and 1").arg(label)});
    }
    if (problems.isEmpty()) {
        problems = settings_.apply(v, modelContext_);
    }
    showProblems(problems);
    if (problems.isEmpty()) {
        setValues(settings_.values());
    }
    return problems.isEmpty();
}

void SettingsDialog::showProblems(const QList<SettingsProblem>& problems) {
    QStringList lines;
    for (const SettingsProblem& problem : problems) {
        lines << problem.message;
    }
    problems_->setText(lines.join(QLatin1Char('\n')));
    problems_->setVisible(!lines.isEmpty());
    if (!problems.isEmpty()) {
        // Show the page of the first problem.
        const QString key = problems.first().key;
        const int tab = key.startsWith(QLatin1String("interface/")) ? 0
                        : key.startsWith(QLatin1String("models/")) || key == QLatin1String("engine/device") ||
                                key == QLatin1String("engine/tensor_parallel") ||
                                key == QLatin1String("engine/quantization") ||
                                key == QLatin1String("engine/quantize_vision")
                            ? 1
                        : key.startsWith(QLatin1String("engine/"))    ? 2
                        : key.startsWith(QLatin1String("documents/")) ? 3
                                                                      : 4;
        tabs_->setCurrentIndex(tab);
    }
}

void SettingsDialog::updateNote() {
    switch (Settings::impactOf(settings_.values(), values())) {
        case EngineImpact::Reload:
            note_->setText(tr("Applying reloads the model: documents being read are stopped and restarted."));
            break;
        case EngineImpact::Reconfigure:
            note_->setText(tr("Applying restarts the engine with the new options; the model stays loaded."));
            break;
        case EngineImpact::None:
            note_->clear();
            break;
    }
    note_->setVisible(!note_->text().isEmpty());
}

void SettingsDialog::restoreDefaults() {
    SettingsValues defaults = Settings::defaults(device_->currentData().toString());
    // The model, the device and the language are the user's choices, not tuning: they stay.
    const SettingsValues current = values();
    defaults.model = current.model;
    defaults.layoutModel = current.layoutModel;
    defaults.chatModel = current.chatModel;
    defaults.language = current.language;
    setValues(defaults);
}

void SettingsDialog::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        retranslate();
    }
    QDialog::changeEvent(event);
}

void SettingsDialog::retranslate() {
    setWindowTitle(tr("Settings"));
    tabs_->setTabText(0, tr("General"));
    tabs_->setTabText(1, tr("Model"));
    tabs_->setTabText(2, tr("Engine"));
    tabs_->setTabText(3, tr("Documents"));
    tabs_->setTabText(4, tr("Export"));
    buttons_->button(QDialogButtonBox::Ok)->setText(tr("OK"));
    buttons_->button(QDialogButtonBox::Apply)->setText(tr("Apply"));
    buttons_->button(QDialogButtonBox::Cancel)->setText(tr("Cancel"));
    buttons_->button(QDialogButtonBox::RestoreDefaults)->setText(tr("Restore defaults"));

    labels_[QStringLiteral("language")]->setText(tr("Language"));
    language_->setItemText(0, tr("System default"));

    labels_[QStringLiteral("model")]->setText(withOption(tr("Model"), tr("a folder, or ORG/NAME on disk")));
    labels_[QStringLiteral("layout")]->setText(withOption(tr("Layout model"), tr("empty: the model's pair")));
    labels_[QStringLiteral("chat")]->setText(
        withOption(tr("Chat model"), tr("a folder, or ORG/NAME on disk")));
    labels_[QStringLiteral("device")]->setText(tr("Device"));
    labels_[QStringLiteral("quantization")]->setText(
        withOption(tr("Quantization"), QStringLiteral("quantization")));
    // Empty fields: the model chosen for them (or the command line's), and the one loaded now.
    model_->setPlaceholderText(
        loadedModel_.isEmpty()
            ? tr("The first PaddleOCR-VL model installed")
            : tr("The first PaddleOCR-VL model installed, or the command line's (now %1)").arg(loadedModel_));
    layoutModel_->setPlaceholderText(tr("The layout model released with the model"));
    chatModel_->setPlaceholderText(
        loadedChatModel_.isEmpty()
            ? tr("The first chat model installed (ERNIE-4.5-VL), else none")
            : tr("The first chat model installed (ERNIE-4.5-VL), else none (now %1)").arg(loadedChatModel_));
    browseModel_->setText(tr("Browse…"));
    manageModels_->setText(tr("Manage models…"));
    browseChatModel_->setText(tr("Browse…"));
    manageChatModels_->setText(tr("Chat models…"));
    manageChatModels_->setToolTip(tr("Download or choose a chat model"));
    quantization_->setItemText(0, tr("None (bfloat16 weights)"));
    quantization_->setItemText(1, tr("WINT8 (8-bit weights, about half the memory)"));
    quantization_->setItemText(2, tr("WINT4 (4-bit weights, for 4 GB cards)"));
    tensorParallel_->setText(
        tr("Split each model over the cards (tensor parallelism) instead of a copy on each"));
    tensorParallel_->setToolTip(
        tr("For models larger than one card: every card holds part of each layer (--tensor-parallel-size)"));
    labels_[QStringLiteral("vision")]->setText(
        withOption(tr("Vision encoder"), QStringLiteral("quantize_vision")));
    visionQuantization_->setItemText(0, tr("As the model computes (bfloat16 on a GPU)"));
    visionQuantization_->setItemText(1, tr("FP8 (faster on RTX 40 series and later cards, less exact)"));

    const QString context = modelContext_ ? QString::number(*modelContext_) : tr("the model's context");
    labels_[QStringLiteral("gpu")]->setText(
        withOption(tr("GPU memory utilization"), QStringLiteral("gpu_memory_utilization, (0, 1]")));
    labels_[QStringLiteral("len")]->setText(
        withOption(tr("Context length"), QStringLiteral("max_model_len, 16..") + context));
    maxModelLen_->setSpecialValueText(tr("Automatic (16384, or the model's context if less)"));
    labels_[QStringLiteral("seqs")]->setText(
        withOption(tr("Concurrent sequences"), QStringLiteral("max_num_seqs, 1..256")));
    labels_[QStringLiteral("batched")]->setText(
        withOption(tr("Tokens per step"),
                   QStringLiteral("max_num_batched_tokens, max_num_seqs..max_model_len × max_num_seqs")));
    labels_[QStringLiteral("prefix")]->setText(
        withOption(tr("Prefix caching"), QStringLiteral("enable_prefix_caching")));
    prefixCaching_->setText(tr("Share cached prompt prefixes between requests"));
    labels_[QStringLiteral("kvcache")]->setText(withOption(tr("KV cache"), QStringLiteral("kv_cache_dtype")));
    kvCacheDtype_->setItemText(0, tr("As the model computes (bfloat16 on a GPU)"));
    kvCacheDtype_->setItemText(1, tr("8-bit (about half the memory: longer contexts)"));
    engineHint_->setText(
        tr("These are FastDeploy's serving options, with its names and ranges. The KV cache takes "
           "what GPU memory utilization leaves after the weights."));

    labels_[QStringLiteral("dpi")]->setText(withOption(tr("PDF rendering DPI"), QStringLiteral("18..2400")));
    labelHint_->setText(
        tr("Checked labels reach the Markdown and HTML. A threshold overrides the layout "
           "model's score threshold for that label (0 to 1; empty: PaddleX's)."));
    labelTable_->setHorizontalHeaderLabels({tr("Layout label"), tr("Threshold")});

    formats_[QStringLiteral("md")]->setText(tr("Markdown (.md, with figures)"));
    formats_[QStringLiteral("json")]->setText(tr("JSON (blocks, boxes, labels, order)"));
    formats_[QStringLiteral("html")]->setText(tr("HTML"));
    formats_[QStringLiteral("pdf")]->setText(tr("Searchable PDF"));
    formats_[QStringLiteral("xlsx")]->setText(tr("Excel workbook of the tables (.xlsx)"));
    formats_[QStringLiteral("docx")]->setText(tr("Word document (.docx)"));
    updateNote();
}

}  // namespace folio
