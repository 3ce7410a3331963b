/**
 * The chain the chain tests run: photo → stylized (by id) → animated from the stylized still (by URL)
 * → reframed 9:16 and 1:1 (a fan-out, by id), at the draft tier. One recipe text for every test of it.
 */
export const FAN_OUT_CHAIN = `rules:
  - match: "*.png"
    input_as: source
    steps:
      - name: stylize
        request: { type: image_edit, model: uni-1, prompt: "watercolor" }
      - name: animate
        request: { type: video, model: ray-3.2, prompt: "slow pan", video: { resolution: 360p, start_frame: { from: stylize } } }
      - name: portrait
        request: { type: video_reframe, model: ray-3.2, prompt: "keep it", aspect_ratio: "9:16", source: { from: animate }, video: { resolution: 360p } }
      - name: square
        request: { type: video_reframe, model: ray-3.2, prompt: "keep it", aspect_ratio: "1:1", source: { from: animate }, video: { resolution: 360p } }
`;

/** Text files at any depth are square image prompts, PNGs image_edit sources (one request each). */
export const PROMPT_OR_EDIT_ANY_DEPTH = `rules:
  - match: "**/*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "1:1" }
  - match: "**/*.png"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "watercolor" }
`;

/** The fan-out chain's first two steps: a PNG stylized, then animated from the stylized still (by URL). */
export const TWO_STEP_CHAIN = FAN_OUT_CHAIN.slice(0, FAN_OUT_CHAIN.indexOf('      - name: portrait'));
