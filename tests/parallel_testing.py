"""Small hand-written English-German parallel text, one sentence a line as WMT's plain files
hold it, of lengths from a word to a paragraph (so that a batch of buckets sees every bucket)."""

from __future__ import annotations

from pathlib import Path

PAIRS = [
    ("Hello world.", "Hallo Welt."),
    ("The database does not exist.", "Die Datenbank existiert nicht."),
    ('The database "%s" does not exist.', "Die Datenbank »%s« existiert nicht."),
    ("Connection to the server failed: %s", "Verbindung zum Server fehlgeschlagen: %s"),
    ("Options:", "Optionen:"),
    ("could not open file: %m", "konnte Datei nicht öffnen: %m"),
    ("The server is shutting down.", "Der Server fährt herunter."),
    ("Report bugs to the mailing list.", "Berichten Sie Fehler an die Mailingliste."),
    (
        "The table could not be created because a table of that name already exists in the "
        "schema, and the option to replace it was not given on the command line.",
        "Die Tabelle konnte nicht erzeugt werden, weil im Schema bereits eine Tabelle dieses "
        "Namens existiert und die Option zum Ersetzen nicht auf der Kommandozeile angegeben "
        "wurde.",
    ),
    ("The connection was closed by the server.", "Die Verbindung wurde vom Server geschlossen."),
    (
        "If the data directory is not specified, the environment variable is used.",
        "Wenn kein Datenverzeichnis angegeben ist, dann wird die Umgebungsvariable verwendet.",
    ),
    ("Success.", "Erfolg."),
    (
        "The server could not be started, because the data directory belongs to another user.",
        "Der Server konnte nicht gestartet werden, weil das Datenverzeichnis einem anderen "
        "Benutzer gehört.",
    ),
]


def write_parallel(folder: Path, name: str = "train", pairs=PAIRS) -> tuple[Path, Path]:
    """folder/<name>.en and folder/<name>.de, line for line."""
    paths = folder / f"{name}.en", folder / f"{name}.de"
    for side, path in enumerate(paths):
        path.write_text("".join(f"{pair[side]}\n" for pair in pairs), encoding="utf-8")
    return paths
