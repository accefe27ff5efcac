#include "engine/image/preprocessor-config.h"

#include "engine/common/error.h"
#include "engine/common/json-reader.h"
#include "engine/common/mapped-file.h"

namespace folio {

static PreprocessorConfig read_preprocessor_config(const nlohmann::json& root, const std::string& origin) {
    const ObjectReader reader(root, "", origin);
    PreprocessorConfig config;

    if (const auto size = reader.object("size")) {
        config.min_pixels = size->integer64("shortest_edge", config.min_pixels);
        config.max_pixels = size->integer64("longest_edge", config.max_pixels);
    }
    config.min_pixels = reader.integer64("min_pixels", config.min_pixels);
    config.max_pixels = reader.integer64("max_pixels", config.max_pixels);
    config.patch_size = reader.integer("patch_size", config.patch_size);
    config.merge_size = reader.integer("merge_size", config.merge_size);
    config.temporal_patch_size = reader.integer("temporal_patch_size", config.temporal_patch_size);
    config.image_mean = reader.channels("image_mean", config.image_mean);
    config.image_std = reader.channels("image_std", config.image_std);
    config.rescale_factor = reader.number("rescale_factor", config.rescale_factor);
    config.do_resize = reader.boolean("do_resize", config.do_resize);
    config.do_rescale = reader.boolean("do_rescale", config.do_rescale);
    config.do_normalize = reader.boolean("do_normalize", config.do_normalize);
    config.do_convert_rgb = reader.boolean("do_convert_rgb", config.do_convert_rgb);
    config.resample = reader.integer("resample", config.resample);

    if (config.min_pixels <= 0) {
        fail(origin, ": the smallest pixel count (min_pixels or size.shortest_edge) must be positive, got ",
             config.min_pixels);
    }
    if (config.max_pixels < config.min_pixels || config.max_pixels > kMaxPreprocessorPixels) {
        fail(origin, ": the largest pixel count (max_pixels or size.longest_edge) must be from min_pixels (",
             config.min_pixels, ") to ", kMaxPreprocessorPixels, ", got ", config.max_pixels);
    }
    require_positive(reader, {{"patch_size", config.patch_size},
                              {"merge_size", config.merge_size},
                              {"temporal_patch_size", config.temporal_patch_size}});
    require_positive(reader, "rescale_factor", config.rescale_factor);
    for (const float s : config.image_std) {
        require_positive(reader, "image_std", s);
    }
    if (config.resample < 0 || config.resample > 5) {
        fail(origin, ": \"resample\" must be a PIL resampling filter from 0 to 5, got ", config.resample);
    }
    return config;
}

PreprocessorConfig parse_preprocessor_config(std::string_view json_text, const std::string& origin) {
    const nlohmann::json root = parse_json_object(json_text, origin);
    return read_json_values(origin, [&] { return read_preprocessor_config(root, origin); });
}

PreprocessorConfig load_preprocessor_config(const std::filesystem::path& preprocessor_config_json) {
    return parse_preprocessor_config(read_file_text(preprocessor_config_json),
                                     preprocessor_config_json.string());
}

}  // namespace folio
