"""``--tokens-file`` and the default ``$REMEM_HOME/mcp-token``: a file of bearer tokens another account can read
(or has written) is refused, as ssh refuses such a key, with an error that names the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.mcp_http import SecretFileError, default_token, load_tokens

TOKEN = "tok-file-0123456789abcdef"
posix = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX file modes")


def _tokens(tmp_path: Path, mode: int) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"{TOKEN}:acme\n")
    os.chmod(path, mode)
    return path


@posix
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o620])
def test_a_tokens_file_open_to_other_accounts_is_refused_with_the_fix(tmp_path: Path, mode: int) -> None:
    path = _tokens(tmp_path, mode)
    with pytest.raises(SecretFileError) as err:
        load_tokens(path)
    assert f"chmod 600 {path}" in str(err.value) and f"{mode:04o}" in str(err.value)
    assert TOKEN not in str(err.value)  # the error never shows a token


@posix
def test_a_private_tokens_file_is_read(tmp_path: Path) -> None:
    assert set(load_tokens(_tokens(tmp_path, 0o600))) == {TOKEN}
    assert set(load_tokens(_tokens(tmp_path, 0o400))) == {TOKEN}


@posix
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a file away needs root")
def test_a_tokens_file_another_account_owns_is_refused(tmp_path: Path) -> None:
    path = _tokens(tmp_path, 0o600)
    os.chown(path, 65534, 65534)
    with pytest.raises(SecretFileError, match="belongs to uid 65534"):
        load_tokens(path)
    mine = tmp_path / "home" / "mcp-token"  # the default token file too: planted by another account, refused
    mine.parent.mkdir(mode=0o700)
    mine.write_text("planted-0123456789abcdef\n")
    os.chown(mine, 65534, 65534)
    with pytest.raises(SecretFileError):
        default_token(mine)


@posix
def test_our_own_default_token_file_left_loose_is_tightened_not_refused(tmp_path: Path) -> None:
    target = tmp_path / "home" / "mcp-token"
    tokens, _ = default_token(target)
    os.chmod(target, 0o644)  # as an older version or a careless copy left it
    again, _ = default_token(target)
    assert again.keys() == tokens.keys() and os.stat(target).st_mode & 0o077 == 0


@posix
def test_the_cli_refuses_a_readable_tokens_file_before_serving(tmp_path: Path) -> None:
    path = _tokens(tmp_path, 0o644)
    env = {**os.environ, "REMEM_HOME": str(tmp_path / "home"), "REMEM_SERVICE": "off"}
    env.pop("REMEM_MCP_TOKENS", None)
    done = subprocess.run([sys.executable, "-m", "remem.cli", "mcp", "--http", "--port", "9", "--tokens-file",
                           str(path), "--embedder", "none"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"chmod 600 {path}" in " ".join(done.stderr.split()) and TOKEN not in done.stderr + done.stdout
