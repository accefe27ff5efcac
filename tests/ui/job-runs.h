// Runs of the job controller in the desktop app's tests: options for short runs on the fixture models, and a
// run waited for.
#pragma once

#include <QList>
#include <QSignalSpy>

#include "app/jobs/job-controller.h"
#include "fixture-engine.h"

namespace folio::test {

// Runs the documents and waits for the job to end; its summary (empty where it did not end in time).
inline PipelineSummary runAndWait(JobController& jobs, const QList<int>& docs, int timeoutMs = 240000) {
    QSignalSpy finished(&jobs, &JobController::jobFinished);
    jobs.run(docs);
    if (!finished.wait(timeoutMs)) {
        return {};
    }
    return finished.first().first().value<PipelineSummary>();
}

// Fixture pipeline options with every layout candidate kept, pages at 100 DPI.
inline void useShortRuns(JobController& jobs) {
    jobs.setPipelineOptions(fixturePipelineOptions(true));
    DocumentOptions documentOptions;
    documentOptions.dpi = 100;
    jobs.setDocumentOptions(documentOptions);
}

}  // namespace folio::test
