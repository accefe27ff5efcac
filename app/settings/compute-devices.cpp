#include "app/settings/compute-devices.h"

#include <QCoreApplication>
#include <QThread>

#ifdef FOLIO_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace folio {

QList<ComputeDevice> computeDevices() {
    QList<ComputeDevice> devices;
#ifdef FOLIO_WITH_CUDA
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        count = 0;
        cudaGetLastError();  // no driver or no device: clear the error
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp properties{};
        if (cudaGetDeviceProperties(&properties, i) != cudaSuccess) {
            continue;
        }
        ComputeDevice device;
        device.id = QStringLiteral("cuda:%1").arg(i);
        device.memoryBytes = static_cast<qint64>(properties.totalGlobalMem);
        device.name = QStringLiteral("%1 (%2 GB)")
                          .arg(QString::fromLatin1(properties.name))
                          .arg(static_cast<double>(device.memoryBytes) / 1e9, 0, 'f', 1);
        devices << device;
    }
    if (devices.size() > 1) {
        // Every card, a copy of the models on each and the work spread among them.
        ComputeDevice all;
        QStringList ids;
        for (const ComputeDevice& device : devices) {
            ids << device.id;
            all.memoryBytes += device.memoryBytes;
        }
        all.id = ids.join(QLatin1Char(','));
        all.name = QCoreApplication::translate("folio::ComputeDevices", "All %1 GPUs (the models on each)")
                       .arg(devices.size());
        devices << all;
    }
#endif
    devices << ComputeDevice{QStringLiteral("cpu"),
                             QCoreApplication::translate("folio::ComputeDevices", "CPU (%1 threads)")
                                 .arg(QThread::idealThreadCount()),
                             0};
    return devices;
}

}  // namespace folio
