#include "ui/main-window/error-panel.h"

#include <QDateTime>
#include <QEvent>
#include <QHBoxLayout>
#include <QIcon>
#include <QListWidget>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

#include "app/settings/error-setting.h"

namespace folio {

namespace {

constexpr int kMessageRole = Qt::UserRole;
constexpr int kSettingRole = Qt::UserRole + 1;

}  // namespace

ErrorPanel::ErrorPanel(QWidget* parent) : QDockWidget(tr("Problems"), parent) {
    setObjectName(QStringLiteral("problems"));
    auto* content = new QWidget(this);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 2, 4, 4);
    list_ = new QListWidget(content);
    list_->setWordWrap(true);
    list_->setAlternatingRowColors(true);
    list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    layout->addWidget(list_);
    auto* buttons = new QHBoxLayout;
    settingButton_ = new QPushButton(content);
    settingButton_->setObjectName(QStringLiteral("openSetting"));
    settingButton_->setIcon(QIcon::fromTheme(QStringLiteral("preferences-system")));
    settingButton_->hide();
    connect(settingButton_, &QPushButton::clicked, this, [this] {
        if (const QListWidgetItem* item = list_->currentItem()) {
            const QString key = item->data(kSettingRole).toString();
            if (!key.isEmpty()) {
                Q_EMIT settingRequested(key);
            }
        }
    });
    buttons->addWidget(settingButton_);
    buttons->addStretch();
    clearButton_ = new QPushButton(tr("Clear"), content);
    connect(clearButton_, &QPushButton::clicked, this, &ErrorPanel::clear);
    buttons->addWidget(clearButton_);
    layout->addLayout(buttons);
    setWidget(content);
    connect(list_, &QListWidget::currentItemChanged, this, &ErrorPanel::updateSettingButton);
    connect(list_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
        const QString key = item->data(kSettingRole).toString();
        if (!key.isEmpty()) {
            Q_EMIT settingRequested(key);
        }
    });
}

QString ErrorPanel::settingTitle(const QString& setting) {
    using namespace setting_key;
    const QString model = tr("Model");
    const QString engine = tr("Engine");
    QString page;
    QString field;
    if (setting == QLatin1String(kModel)) {
        page = model;
        field = tr("Model");
    } else if (setting == QLatin1String(kLayoutModel)) {
        page = model;
        field = tr("Layout model");
    } else if (setting == QLatin1String(kChatModel)) {
        page = model;
        field = tr("Chat model");
    } else if (setting == QLatin1String(kDevice)) {
        page = model;
        field = tr("Device");
    } else if (setting == QLatin1String(kQuantization)) {
        page = model;
        field = tr("Quantization");
    } else if (setting == QLatin1String(kGpuMemory)) {
        page = engine;
        field = tr("GPU memory utilization");
    } else if (setting == QLatin1String(kContextLength)) {
        page = engine;
        field = tr("Context length");
    } else if (setting == QLatin1String(kSequences)) {
        page = engine;
        field = tr("Concurrent sequences");
    } else if (setting == QLatin1String(kBatchedTokens)) {
        page = engine;
        field = tr("Tokens per step");
    } else {
        return tr("Settings");
    }
    return tr("Settings › %1 › %2").arg(page, field);
}

void ErrorPanel::addError(const QString& message, const QString& setting) {
    auto* item = new QListWidgetItem(
        style()->standardIcon(QStyle::SP_MessageBoxWarning),
        QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss  ")) + message, list_);
    item->setData(kMessageRole, message);
    item->setData(kSettingRole, setting);
    item->setToolTip(setting.isEmpty() ? message
                                       : message + QStringLiteral("\n\n") +
                                             tr("Double-click to open %1").arg(settingTitle(setting)));
    // The newest problem is the one its setting is offered for.
    list_->setCurrentItem(item, QItemSelectionModel::ClearAndSelect);
    list_->scrollToItem(item);
    updateSettingButton();
    if (!isVisible()) {
        show();
        Q_EMIT opened();
    }
    Q_EMIT countChanged(count());
}

int ErrorPanel::count() const {
    return list_->count();
}

QString ErrorPanel::message(int row) const {
    const QListWidgetItem* item = list_->item(row);
    return item != nullptr ? item->data(kMessageRole).toString() : QString();
}

QString ErrorPanel::setting(int row) const {
    const QListWidgetItem* item = list_->item(row);
    return item != nullptr ? item->data(kSettingRole).toString() : QString();
}

void ErrorPanel::clear() {
    list_->clear();
    updateSettingButton();
    Q_EMIT countChanged(0);
}

void ErrorPanel::updateSettingButton() {
    const QListWidgetItem* item = list_->currentItem();
    const QString key = item != nullptr ? item->data(kSettingRole).toString() : QString();
    if (!key.isEmpty()) {
        settingButton_->setText(tr("Open %1…").arg(settingTitle(key)));
    }
    settingButton_->setVisible(!key.isEmpty());
}

void ErrorPanel::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        setWindowTitle(tr("Problems"));
        clearButton_->setText(tr("Clear"));
        updateSettingButton();
    }
    QDockWidget::changeEvent(event);
}

}  // namespace folio
