#include "engine/models/model-description.h"

#include <algorithm>

namespace folio {

const char* model_role_name(ModelRole role) {
    switch (role) {
        case ModelRole::Recognition:
            return "recognition";
        case ModelRole::Layout:
            return "layout";
        case ModelRole::Chat:
            return "chat";
    }
    return "unknown";
}

const char* modality_name(Modality modality) {
    switch (modality) {
        case Modality::Text:
            return "text";
        case Modality::Image:
            return "image";
        case Modality::Video:
            return "video";
    }
    return "unknown";
}

bool ModelDescription::takes(Modality modality) const {
    return std::find(modalities.begin(), modalities.end(), modality) != modalities.end();
}

}  // namespace folio
