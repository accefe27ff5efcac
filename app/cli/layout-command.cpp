#include "app/cli/layout-command.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "app/images/image-loader.h"
#include "app/options/cli-options.h"
#include "engine/backend/backend.h"
#include "engine/common/error.h"
#include "engine/layout/layout-labels.h"
#include "engine/layout/layout-pipeline.h"
#include "engine/layout/layout-postprocess.h"
#include "engine/models/pp-doclayout/pp-doclayout.h"

namespace folio::cli {

const char* const kLayoutUsage =
    R"(  folio-cli layout --model DIR [--device cpu|cuda[:N]] [--threads N] [--batch N] [--overlay DIR]
                   [--layout-precision float32|tf32|bfloat16] [--raw [--threshold T]] IMAGE...
      Finds the blocks of each page image with a layout model (a PP-DocLayoutV2 or PP-DocLayoutV3 folder
      in the safetensors layout) and prints them as JSON: label, score, box (x1, y1, x2, y2 in pixels),
      polygon (V3) and reading order, after PaddleOCR-VL's rules for that model. --raw prints what
      transformers' post_process_object_detection gives at --threshold (default 0.5) instead: scores,
      labels, boxes, order_seq and polygon_points, with every product in float32. On a GPU the
      convolutions otherwise round their inputs as --layout-precision says (default tf32; bfloat16,
      which rounds the linear layers' inputs too, is faster, with a larger error). --overlay DIR
      writes each page with its blocks drawn (DIR/NAME.png). --batch pages go through the model
      together (default 8).
)";

namespace {

struct LayoutArgs {
    std::filesystem::path model;
    std::string device = "cpu";
    int threads = 0;
    int batch = 8;
    bool raw = false;
    std::optional<ConvPrecision> precision;
    float threshold = 0.5f;
    std::optional<std::filesystem::path> overlay;
    std::vector<std::filesystem::path> images;
};

template <typename T>
T number(const std::string& flag, const std::string& text) {
    T value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
        fail("option ", flag, " expects a number, got '", text, "'");
    }
    return value;
}

LayoutArgs parse(int argc, char** argv, int first) {
    LayoutArgs args;
    bool has_model = false, has_threshold = false;
    for (int i = first; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                fail("option ", arg, " needs a value");
            }
            return argv[++i];
        };
        if (arg == "--model") {
            args.model = value();
            has_model = true;
        } else if (arg == "--device") {
            args.device = value();
        } else if (arg == "--threads") {
            args.threads = number<int>(arg, value());
        } else if (arg == "--batch") {
            args.batch = number<int>(arg, value());
            if (args.batch < 1 || args.batch > 256) {
                fail("option --batch expects 1..256, got ", args.batch);
            }
        } else if (arg == "--layout-precision") {
            const std::string name = value();
            args.precision = find_conv_precision(name);
            if (!args.precision) {
                fail("option --layout-precision expects float32, tf32 or bfloat16, got '", name, "'");
            }
        } else if (arg == "--raw") {
            args.raw = true;
        } else if (arg == "--threshold") {
            args.threshold = number<float>(arg, value());
            has_threshold = true;
            if (!(args.threshold >= 0.0f && args.threshold <= 1.0f)) {
                fail("option --threshold expects 0..1, got ", args.threshold);
            }
        } else if (arg == "--overlay") {
            args.overlay = value();
        } else if (arg.starts_with("--")) {
            fail("unknown option ", arg);
        } else {
            args.images.emplace_back(arg);
        }
    }
    if (!has_model) {
        fail("missing required option --model");
    }
    if (args.images.empty()) {
        fail("layout needs at least one IMAGE");
    }
    if (has_threshold && !args.raw) {
        fail("--threshold goes with --raw; the pipeline's rules have their own thresholds");
    }
    if (args.raw && args.precision && *args.precision != ConvPrecision::Float32) {
        fail("--raw computes every product in float32; --layout-precision ",
             conv_precision_name(*args.precision), " goes without it");
    }
    return args;
}

// The pipeline's rules for the model; its labels reach them as block kinds by name (layout_label_kinds).
LayoutRules rules_for(const PpDocLayoutConfig& config) {
    return config.kind == LayoutModelKind::V2 ? paddleocr_vl_layout_rules() : paddleocr_vl_1_5_layout_rules();
}

// A detection's label: the model's own name for a raw detection, the block kind after the rules.
std::string label_name(const LayoutDetection& d, const PpDocLayoutConfig& config, bool raw) {
    return raw ? config.labels.at(static_cast<size_t>(d.label)) : std::string(layout_label_name(d.label));
}

nlohmann::json block_json(const LayoutDetection& d, const PpDocLayoutConfig& config) {
    nlohmann::json block = {{"label", label_name(d, config, false)},
                            {"score", d.score},
                            {"box", {d.box[0], d.box[1], d.box[2], d.box[3]}},
                            {"order", d.order}};
    if (!d.polygon.empty()) {
        nlohmann::json polygon = nlohmann::json::array();
        for (const auto& p : d.polygon) {
            polygon.push_back({p[0], p[1]});
        }
        block["polygon"] = polygon;
    }
    return block;
}

nlohmann::json raw_json(const std::vector<LayoutDetection>& dets, bool polygons) {
    nlohmann::json out = {{"scores", nlohmann::json::array()},
                          {"labels", nlohmann::json::array()},
                          {"boxes", nlohmann::json::array()},
                          {"order_seq", nlohmann::json::array()}};
    if (polygons) {
        out["polygon_points"] = nlohmann::json::array();
    }
    for (const LayoutDetection& d : dets) {
        out["scores"].push_back(d.score);
        out["labels"].push_back(d.label);
        out["boxes"].push_back({d.box[0], d.box[1], d.box[2], d.box[3]});
        out["order_seq"].push_back(d.order);
        if (polygons) {
            nlohmann::json polygon = nlohmann::json::array();
            for (const auto& p : d.polygon) {
                polygon.push_back({p[0], p[1]});
            }
            out["polygon_points"].push_back(polygon);
        }
    }
    return out;
}

// A colour per label, spread around the hue circle.
cv::Scalar label_colour(int label) {
    cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar((label * 47) % 180, 200, 210));
    cv::Mat bgr;
    cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
    const cv::Vec3b c = bgr.at<cv::Vec3b>(0, 0);
    return {static_cast<double>(c[0]), static_cast<double>(c[1]), static_cast<double>(c[2])};
}

void write_overlay(const Image& page, const std::vector<LayoutDetection>& dets,
                   const PpDocLayoutConfig& config, bool raw, const std::filesystem::path& path) {
    cv::Mat rgb(page.height, page.width, CV_8UC3, const_cast<uint8_t*>(page.rgb.data()));
    cv::Mat canvas;
    cv::cvtColor(rgb, canvas, cv::COLOR_RGB2BGR);
    const int thickness = std::max(1, std::min(page.width, page.height) / 400);
    const double font = std::max(0.4, std::min(page.width, page.height) / 1600.0);
    for (const LayoutDetection& d : dets) {
        const cv::Scalar colour = label_colour(d.label);
        if (d.polygon.size() >= 3) {
            std::vector<cv::Point> points;
            for (const auto& p : d.polygon) {
                points.emplace_back(static_cast<int>(p[0]), static_cast<int>(p[1]));
            }
            cv::polylines(canvas, points, true, colour, thickness, cv::LINE_AA);
        } else {
            cv::rectangle(canvas, cv::Point(static_cast<int>(d.box[0]), static_cast<int>(d.box[1])),
                          cv::Point(static_cast<int>(d.box[2]), static_cast<int>(d.box[3])), colour,
                          thickness, cv::LINE_AA);
        }
        std::string text = label_name(d, config, raw);
        if (d.order > 0) {
            text = std::to_string(d.order) + " " + text;
        }
        int baseline = 0;
        const cv::Size size = cv::getTextSize(text, cv::FONT_HERSHEY_SIMPLEX, font, thickness, &baseline);
        const cv::Point origin(static_cast<int>(d.box[0]),
                               std::max(size.height + 2, static_cast<int>(d.box[1]) - 2));
        cv::rectangle(canvas, cv::Point(origin.x, origin.y - size.height - 2),
                      cv::Point(origin.x + size.width + 2, origin.y + baseline), colour, cv::FILLED);
        cv::putText(canvas, text, cv::Point(origin.x + 1, origin.y - 1), cv::FONT_HERSHEY_SIMPLEX, font,
                    cv::Scalar(255, 255, 255), thickness, cv::LINE_AA);
    }
    const std::filesystem::path partial = path.string() + ".partial.png";
    if (!cv::imwrite(partial.string(), canvas)) {
        fail(path.string(), ": cannot write the overlay");
    }
    std::filesystem::rename(partial, path);
}

}  // namespace

int run_layout(int argc, char** argv, int first) {
    const LayoutArgs args = parse(argc, argv, first);
    const std::unique_ptr<Backend> backend = make_backend(args.device, args.threads);
    // The raw outputs are for comparing with the reference: every product in float32 there.
    const PpDocLayout model(
        *backend, args.model,
        {.conv_precision = args.raw ? ConvPrecision::Float32 : args.precision.value_or(ConvPrecision::Tf32)});
    const PpDocLayoutConfig& config = model.config();
    const std::optional<LayoutRules> rules = args.raw ? std::nullopt : std::optional(rules_for(config));
    const LayoutInputSize input{model.preprocess_config().width, model.preprocess_config().height};
    if (args.overlay) {
        std::filesystem::create_directories(*args.overlay);
    }
    nlohmann::json pages = nlohmann::json::array();
    for (size_t start = 0; start < args.images.size(); start += static_cast<size_t>(args.batch)) {
        const size_t end = std::min(args.images.size(), start + static_cast<size_t>(args.batch));
        std::vector<Image> images;
        std::vector<PageImage> batch;
        for (size_t i = start; i < end; ++i) {
            images.push_back(load_image(args.images[i]));
        }
        for (const Image& image : images) {
            batch.push_back({image.rgb, image.width, image.height});
        }
        const std::vector<LayoutRawOutput> raw =
            model.detect(batch, {.mask_min_score = args.raw ? args.threshold : rules->lowest_threshold()});
        for (size_t i = 0; i < raw.size(); ++i) {
            const Image& image = images[i];
            std::vector<LayoutDetection> dets =
                args.raw ? post_process_layout(raw[i], image.width, image.height, args.threshold, input)
                         : detect_layout_blocks(raw[i], image.width, image.height, *rules, input);
            nlohmann::json page = {
                {"image", args.images[start + i].string()}, {"width", image.width}, {"height", image.height}};
            if (args.raw) {
                page["detections"] = raw_json(dets, config.kind == LayoutModelKind::V3);
            } else {
                page["blocks"] = nlohmann::json::array();
                for (const LayoutDetection& d : dets) {
                    page["blocks"].push_back(block_json(d, config));
                }
            }
            if (args.overlay) {
                write_overlay(image, dets, config, args.raw,
                              *args.overlay / (args.images[start + i].stem().string() + ".png"));
            }
            pages.push_back(std::move(page));
        }
    }
    std::cout << pages.dump(1) << "\n";
    return 0;
}

}  // namespace folio::cli
