"""One module per harness, behind the interface in :mod:`harvester.parsers.base`.

Adding a harness: write ``parsers/<name>.py``, add ``fixtures/<name>/`` with a SOURCE.md, and add one
line to ``HARNESSES`` below.
"""

from __future__ import annotations

from harvester.parsers import (
    aider,
    antigravity,
    auggie,
    claude_code,
    cline,
    codex,
    continue_cli,
    copilot_cli,
    cursor,
    cursor_transcripts,
    dcode,
    deepseek_harness,
    devin,
    droid,
    gemini_cli,
    grok,
    hermes,
    iflow,
    kimi,
    openclaw,
    opencode,
    pi,
    qwen_code,
    vscode_copilot,
    windsurf,
)
from harvester.parsers.base import Harness

HARNESSES: dict[str, Harness] = {
    h.name: h
    for h in (
        Harness(claude_code.NAME, claude_code.roots, claude_code.SOURCES, claude_code.parse, "Claude Code",
                claude_code.PROCESSES, forks_copy_history=True),
        Harness(codex.NAME, codex.roots, codex.SOURCES, codex.parse, "Codex CLI", codex.PROCESSES),
        Harness(qwen_code.NAME, qwen_code.roots, qwen_code.SOURCES, qwen_code.parse, "Qwen Code",
                qwen_code.PROCESSES),
        Harness(gemini_cli.NAME, gemini_cli.roots, gemini_cli.SOURCES, gemini_cli.parse, "Gemini CLI",
                gemini_cli.PROCESSES),
        Harness(opencode.OPENCODE_NAME, opencode.opencode_roots, opencode.OPENCODE_SOURCES, opencode.parse,
                "opencode", opencode.OPENCODE_PROCESSES),
        Harness(opencode.KILO_NAME, opencode.kilo_roots, opencode.KILO_SOURCES, opencode.parse, "Kilo CLI",
                opencode.KILO_PROCESSES),
        Harness(continue_cli.NAME, continue_cli.roots, continue_cli.SOURCES, continue_cli.parse, "Continue",
                continue_cli.PROCESSES),
        Harness(aider.NAME, aider.roots, aider.SOURCES, aider.parse, "Aider", aider.PROCESSES,
                roots_in_repositories=True),
        Harness(cline.CLINE_NAME, cline.cline_roots, cline.CLINE_SOURCES, cline.parse, "Cline",
                cline.CLINE_PROCESSES),
        Harness(cline.CLINE_LEGACY_NAME, cline.cline_legacy_roots, cline.CLINE_LEGACY_SOURCES, cline.parse,
                "Cline (legacy tasks)", cline.CLINE_LEGACY_PROCESSES),
        Harness(cline.ROO_NAME, cline.roo_roots, cline.ROO_SOURCES, cline.parse, "Roo Code", cline.ROO_PROCESSES),
        Harness(cline.KILO_CODE_NAME, cline.kilo_code_roots, cline.KILO_CODE_SOURCES, cline.parse,
                "Kilo Code (legacy extension)", cline.KILO_CODE_PROCESSES),
        Harness(pi.PI_NAME, pi.pi_roots, pi.PI_SOURCES, pi.parse, "pi", pi.PI_PROCESSES),
        Harness(pi.PRIME_NAME, pi.prime_roots, pi.PRIME_SOURCES, pi.parse, "Prime Agent", pi.PRIME_PROCESSES),
        Harness(pi.OMP_NAME, pi.omp_roots, pi.OMP_SOURCES, pi.parse, "oh-my-pi", pi.OMP_PROCESSES),
        Harness(openclaw.NAME, openclaw.roots, openclaw.SOURCES, openclaw.parse, "OpenClaw", openclaw.PROCESSES),
        Harness(copilot_cli.NAME, copilot_cli.roots, copilot_cli.SOURCES, copilot_cli.parse, "Copilot CLI",
                copilot_cli.PROCESSES),
        Harness(cursor.CLI_NAME, cursor.cli_roots, cursor_transcripts.CLI_SOURCES, cursor_transcripts.parse,
                "Cursor CLI", cursor.CLI_PROCESSES),
        Harness(cursor.IDE_NAME, cursor.ide_roots, cursor.IDE_SOURCES, cursor.parse, "Cursor", cursor.IDE_PROCESSES),
        Harness(vscode_copilot.NAME, vscode_copilot.roots, vscode_copilot.SOURCES, vscode_copilot.parse,
                "VS Code Copilot Chat", vscode_copilot.PROCESSES),
        Harness(windsurf.NAME, windsurf.roots, windsurf.SOURCES, windsurf.parse, "Windsurf (Cascade)",
                windsurf.PROCESSES, opaque=windsurf.OPAQUE),
        Harness(antigravity.NAME, antigravity.roots, antigravity.SOURCES, antigravity.parse, "Antigravity CLI",
                antigravity.PROCESSES),
        Harness(auggie.NAME, auggie.roots, auggie.SOURCES, auggie.parse, "Auggie", auggie.PROCESSES),
        Harness(grok.NAME, grok.roots, grok.SOURCES, grok.parse, "Grok Build", grok.PROCESSES),
        Harness(hermes.NAME, hermes.roots, hermes.SOURCES, hermes.parse, "Hermes Agent", hermes.PROCESSES),
        Harness(iflow.NAME, iflow.roots, iflow.SOURCES, iflow.parse, "iFlow CLI", iflow.PROCESSES),
        Harness(kimi.NAME, kimi.roots, kimi.SOURCES, kimi.parse, "Kimi CLI", kimi.PROCESSES),
        Harness(devin.NAME, devin.roots, devin.SOURCES, devin.parse, "Devin CLI", devin.PROCESSES),
        Harness(deepseek_harness.NAME, deepseek_harness.roots, deepseek_harness.SOURCES, deepseek_harness.parse,
                "DeepSeek Harness", deepseek_harness.PROCESSES),
        Harness(dcode.NAME, dcode.roots, dcode.SOURCES, dcode.parse, "DeepAgents Code", dcode.PROCESSES),
        Harness(droid.NAME, droid.roots, droid.SOURCES, droid.parse, "Factory Droid", droid.PROCESSES),
    )
}
