// One block's recognition as an engine request, the same for the document pipeline and for a block the user
// runs again or draws: its crop made ready for the task (a formula's white margins trimmed), the task
// prompt, the pixel bounds of its label, the block's token budget fitted to the context, and spotting's
// location tokens kept in its text.
#pragma once

#include <QImage>
#include <QString>

#include "app/pipeline/block-task.h"
#include "engine/backend/sampling.h"
#include "engine/service/request-builder.h"

namespace folio {

// The crop as the task reads it: a formula's margins trimmed where something is left, else the crop.
QImage cropForTask(const QImage& crop, const QString& task);

// The request for a block of `label` read with `task` from `crop` (already made ready by cropForTask).
RequestSpec blockRequest(const QImage& crop, const QString& label, const QString& task,
                         const RecognitionOptions& recognition, const SamplingParams& sampling);

}  // namespace folio
