//! The open bar: the bundled experiments (with descriptions), a path field and a small
//! in-app file browser, the variant × sweep-point and seed choice, export; errors in a
//! file shown with file:line:col and the field path.

use crate::session::{Opened, Selection};
use crate::store::Store;
use crate::ui::{Action, Actions};
use crate::worker::Cmd;
use experiments::catalog::Entry;
use std::path::{Path, PathBuf};

/// The open bar's own state: the path field, the export path, the file browser.
pub struct OpenState {
    /// The path field.
    pub path_text: String,
    pub export_path: String,
    pub browser: Browser,
}

impl Default for OpenState {
    fn default() -> Self {
        OpenState {
            path_text: String::new(),
            export_path: std::env::temp_dir().join("stormglass-session.ron").display().to_string(),
            browser: Browser::new(std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))),
        }
    }
}

/// The in-app file browser (no native dialog: it works the same under Xvfb and in tests).
pub struct Browser {
    pub open: bool,
    pub dir: PathBuf,
}

impl Browser {
    pub fn new(dir: PathBuf) -> Browser {
        Browser { open: false, dir }
    }
    /// Folders and `.ron` files of the current folder, folders first, sorted.
    fn entries(&self) -> Vec<(bool, PathBuf)> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut v: Vec<(bool, PathBuf)> = rd
            .filter_map(|e| e.ok())
            .map(|e| (e.path().is_dir(), e.path()))
            .filter(|(d, p)| *d || p.extension().is_some_and(|x| x == "ron"))
            .collect();
        v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        v
    }
}

/// The open bar: bundled experiments, file, variant × point, seed, export; the load error.
pub fn bar(
    ui: &mut egui::Ui,
    st: &mut OpenState,
    catalog: &[Entry],
    opened: Option<&Opened>,
    store: &Store,
    load_error: Option<&str>,
    out: &mut Actions,
) {
    ui.horizontal_wrapped(|ui| {
        ui.strong("stormglass workbench");
        ui.separator();
        let current = opened.map(|o| o.exp.name.clone()).unwrap_or_default();
        egui::ComboBox::from_id_salt("bundled")
            .selected_text(if current.is_empty() { "bundled…".to_string() } else { current })
            .width(180.0)
            .height(list_height(ui))
            .show_ui(ui, |ui| {
                // Within the window: a long description is cut with "…" (whole on hover).
                ui.set_max_width(ui.ctx().content_rect().width() - 40.0);
                let mut group = "";
                for e in catalog {
                    if e.group != group {
                        group = e.group;
                        ui.weak(group);
                    }
                    ui.horizontal(|ui| {
                        let r = ui.selectable_label(false, e.name).on_hover_text(&e.description);
                        let text = egui::RichText::new(&e.description).weak();
                        ui.add(egui::Label::new(text).truncate()).on_hover_text(&e.description);
                        if r.clicked() {
                            out.push(Action::OpenEntry(e.clone()));
                        }
                    });
                }
            })
            .response
            .on_hover_text("Bundled experiments (the list of `stormglass list`)");
        let l = ui.label("File:");
        let field = ui
            .add(
                egui::TextEdit::singleline(&mut st.path_text)
                    .desired_width(260.0)
                    .hint_text("path to a .ron experiment or scenario"),
            )
            .labelled_by(l.id);
        let enter = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if ui.button("Open").clicked() || enter {
            out.push(Action::OpenPath(PathBuf::from(st.path_text.trim())));
        }
        if ui.button("Browse…").clicked() {
            st.browser.open = !st.browser.open;
        }
        if let Some(o) = opened {
            combo_and_seed(ui, o, store.seed, out);
        }
        ui.separator();
        let l = ui.label("Export to:");
        ui.add(egui::TextEdit::singleline(&mut st.export_path).desired_width(200.0))
            .labelled_by(l.id);
        if ui.button("Export session").clicked() {
            out.push(Action::Send(Cmd::Export(PathBuf::from(st.export_path.trim()))));
        }
    });
    if let Some(e) = load_error {
        ui.colored_label(egui::Color32::from_rgb(220, 80, 60), format!("Cannot open: {e}"));
    }
    if let Some(o) = opened {
        ui.weak(&o.exp.description);
    }
    browser(ui, &mut st.browser, out);
}

/// The bundled list's height: the window below the bar (egui's default, 200 points, shows
/// eight of the 40-odd experiments), at least that default (the popup's own first-frame
/// cap is raised in `Workbench::new`).
fn list_height(ui: &egui::Ui) -> f32 {
    let below = ui.ctx().content_rect().bottom() - ui.max_rect().top() - 48.0;
    below.max(ui.spacing().combo_height)
}

fn combo_and_seed(ui: &mut egui::Ui, o: &Opened, seed: u64, out: &mut Actions) {
    let combos = Selection::combos(&o.exp);
    let cur = combos.iter().find(|c| c.0 == o.sel.combo).map(|c| c.1.clone()).unwrap_or_default();
    egui::ComboBox::from_id_salt("combo")
        .selected_text(cur)
        .width(220.0)
        .show_ui(ui, |ui| {
            for (i, label) in &combos {
                if ui.selectable_label(*i == o.sel.combo, label).clicked() {
                    let mut sel = o.sel.clone();
                    sel.combo = *i;
                    sel.overrides.clear();
                    out.push(Action::Select(sel));
                }
            }
        })
        .response
        .on_hover_text("Variant and sweep point");
    ui.label(format!("seed {seed}"));
}

fn browser(ui: &mut egui::Ui, b: &mut Browser, out: &mut Actions) {
    if !b.open {
        return;
    }
    let mut go: Option<PathBuf> = None;
    let mut open: Option<PathBuf> = None;
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.horizontal(|ui| {
            ui.label(format!("Folder: {}", b.dir.display()));
            if ui.button("Up").clicked() {
                go = b.dir.parent().map(Path::to_path_buf);
            }
            if ui.button("Close").clicked() {
                b.open = false;
            }
        });
        let tall = (ui.ctx().content_rect().height() * 0.5).max(160.0);
        egui::ScrollArea::vertical().max_height(tall).show(ui, |ui| {
            for (is_dir, p) in b.entries() {
                let name =
                    p.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
                let label = if is_dir { format!("[dir] {name}") } else { name };
                if ui.selectable_label(false, label).clicked() {
                    if is_dir {
                        go = Some(p);
                    } else {
                        open = Some(p);
                    }
                }
            }
        });
    });
    if let Some(d) = go {
        b.dir = d;
    }
    if let Some(p) = open {
        b.open = false;
        out.push(Action::OpenPath(p));
    }
}
