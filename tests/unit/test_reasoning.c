/* Reasoning split (llmgen_reasoning_*): where the thinking block is and where the answer starts,
 * for <think> blocks, a block the prompt opened, harmony's channels and plain answers. */
#include <criterion/criterion.h>
#include <string.h>

#include "llmgen.h"

static llmgen_reasoning_span split(const char *prompt, const char *text) {
    llmgen_reasoning_span sp;
    cr_assert_eq(llmgen_reasoning_split(prompt, text, strlen(text), &sp), LLMGEN_OK);
    return sp;
}

static void expect(const char *prompt, const char *text, const char *reasoning, const char *answer) {
    llmgen_reasoning_span sp = split(prompt, text);
    cr_expect_eq(sp.has_reasoning, reasoning != NULL, "%s", text);
    if (reasoning)
        cr_expect(sp.reasoning_end - sp.reasoning_begin == strlen(reasoning) &&
                      !memcmp(text + sp.reasoning_begin, reasoning, strlen(reasoning)), "reasoning of %s", text);
    cr_expect_str_eq(text + sp.answer_begin, answer, "answer of %s", text);
}

Test(reasoning, think_block) {
    expect(NULL, "<think>a é</think>\n\nAnswer.", "a é", "Answer.");
    expect(NULL, "  <think>x</think>y", "x", "y");
    expect("<|im_start|>assistant\n", "<think></think>\n\nA", "", "A");
}

Test(reasoning, block_opened_by_the_prompt) {
    expect("<｜Assistant｜><think>\n", "R here</think>\n\nA", "R here", "A");
    expect("<think>\n\n</think>\n\n", "plain </think>", NULL, "plain </think>"); /* closed by the prompt */
}

Test(reasoning, harmony_channels) {
    expect("<|start|>assistant",
           "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>The answer",
           "think", "The answer");
    expect(NULL, "<|channel|>final<|message|>Only", NULL, "Only");
    /* a tool call's header (commentary) ends the reasoning and stays in the answer */
    expect(NULL, "<|channel|>analysis<|message|>t<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}",
           "t", "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}");
}

Test(reasoning, plain_output_is_all_answer) {
    expect(NULL, "Hello <think> world", NULL, "Hello <think> world");
    expect(NULL, "", NULL, "");
    expect(NULL, "<thi", NULL, "<thi");
}

Test(reasoning, streamed_close_text) {
    llmgen_reasoning *t;
    llmgen_reasoning_piece p;
    cr_assert_eq(llmgen_reasoning_new("<think>\n", &t), LLMGEN_OK);
    cr_expect(llmgen_reasoning_thinking(t));
    cr_expect_str_eq(llmgen_reasoning_close(t), "</think>\n\n");
    cr_assert_eq(llmgen_reasoning_feed(t, "ab</th", 6, 0, &p), LLMGEN_OK);
    cr_expect_eq(p.text_len, 0);
    cr_assert_eq(llmgen_reasoning_feed(t, "ink>ok", 6, 1, &p), LLMGEN_OK);
    cr_expect(!llmgen_reasoning_thinking(t));
    cr_expect_str_eq(p.text, "ok");
    llmgen_reasoning_free(t);
    cr_assert_eq(llmgen_reasoning_new(NULL, &t), LLMGEN_OK);
    cr_assert_eq(llmgen_reasoning_feed(t, "<|channel|>analysis<|message|>x", 31, 0, &p), LLMGEN_OK);
    cr_expect(llmgen_reasoning_thinking(t));
    cr_expect_str_eq(llmgen_reasoning_close(t), "<|end|><|start|>assistant<|channel|>final<|message|>");
    llmgen_reasoning_free(t);
}
