// The engine as the desktop app's tests load it: the small fixture models (random weights: their text is
// noise) on the CPU backend, and pipeline options that keep runs short.
#pragma once

#include <QMarginsF>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QString>
#include <algorithm>

#include "app/jobs/engine-host.h"
#include "app/pipeline/document-pipeline.h"
#include "engine/backend/backend.h"
#include "engine/service/engine-service.h"

namespace folio::test {

inline const char* const kRecognitionDir = FOLIO_FIXTURES_DIR "/paddleocr-vl-tiny";
inline const char* const kLayoutDir = FOLIO_FIXTURES_ROOT "/layout/pp-doclayout-v3-tiny";
inline const char* const kChatDir = FOLIO_FIXTURES_ROOT "/ernie45-vl/ernie45-vl-tiny";
inline const char* const kSamplePdf = FOLIO_SOURCE_DIR "/resources/samples/sample.pdf";

// withChat: the ERNIE-4.5-VL fixture beside them as the chat model.
inline ServiceParams fixtureParams(int threads = 2, bool withChat = false) {
    ServiceParams params;
    params.device.make_backend = [threads] { return make_cpu_backend(threads); };
    params.models.push_back({ModelRole::Recognition, kRecognitionDir, {}});
    if (withChat) {
        params.models.push_back({ModelRole::Chat, kChatDir, {}});
    }
    params.models.push_back({ModelRole::Layout, kLayoutDir, {}});
    params.engine.max_model_len = 4096;
    return params;
}

inline ModelFolders fixtureFolders(bool withChat = false) {
    ModelFolders folders;
    folders.recognition = QString::fromUtf8(kRecognitionDir);
    folders.layout = QString::fromUtf8(kLayoutDir);
    folders.description = QStringLiteral("fixture models");
    if (withChat) {
        folders.chat = QString::fromUtf8(kChatDir);
        folders.chatDescription = QStringLiteral("ernie45-vl-tiny");
    }
    return folders;
}

// Short runs: few new tokens, small crops. lowThresholds: every candidate of the random layout model counts,
// so that pages have several blocks.
inline PipelineOptions fixturePipelineOptions(bool lowThresholds) {
    PipelineOptions o;
    o.recognition.maxNewTokens = 6;
    o.recognition.pixels = {28 * 28 * 4, 28 * 28 * 32};
    o.recognition.chartRecognition = true;  // the fixture model sees charts: recognised, so text streams
    if (lowThresholds) {
        LayoutRules rules = paddleocr_vl_1_5_layout_rules();
        std::fill(rules.thresholds.begin(), rules.thresholds.end(), 0.0F);
        rules.default_threshold = 0.0F;
        o.layoutRules = rules;
    }
    return o;
}

// A PDF of n pages with a title, paragraphs and a table-like grid on each, written with QPdfWriter.
inline void writeTestPdf(const QString& path, int n) {
    QPdfWriter writer(path);
    writer.setPageSize(QPageSize(QPageSize::A5));
    writer.setResolution(72);
    writer.setPageMargins(QMarginsF(0, 0, 0, 0));
    QPainter painter(&writer);
    for (int i = 0; i < n; ++i) {
        if (i > 0) {
            writer.newPage();
        }
        QFont title = painter.font();
        title.setPointSize(18);
        title.setBold(true);
        painter.setFont(title);
        painter.drawText(40, 60, QStringLiteral("Report page %1").arg(i + 1));
        QFont body = painter.font();
        body.setPointSize(10);
        body.setBold(false);
        painter.setFont(body);
        for (int line = 0; line < 8; ++line) {
            painter.drawText(40, 100 + 16 * line,
                             QStringLiteral("Line %1 of the text on page %2, as a scan would "
                                            "show it.")
                                 .arg(line + 1)
                                 .arg(i + 1));
        }
        for (int r = 0; r <= 4; ++r) {
            painter.drawLine(40, 260 + 20 * r, 360, 260 + 20 * r);
        }
        for (int c = 0; c <= 4; ++c) {
            painter.drawLine(40 + 80 * c, 260, 40 + 80 * c, 340);
        }
    }
}

}  // namespace folio::test
