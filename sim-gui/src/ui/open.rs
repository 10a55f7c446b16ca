//! The open bar: the bundled experiments (with descriptions), a path field and a small
//! in-app file browser, the variant × sweep-point and seed choice, export; errors in a
//! file shown with file:line:col and the field path.

use crate::app::Workbench;
use crate::session::Selection;
use crate::worker::Cmd;
use std::path::{Path, PathBuf};

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

pub fn bar(w: &mut Workbench, ui: &mut egui::Ui) {
    ui.horizontal_wrapped(|ui| {
        ui.strong("stormglass workbench");
        ui.separator();
        let current = w.opened.as_ref().map(|o| o.exp.name.clone()).unwrap_or_default();
        let mut pick: Option<PathBuf> = None;
        let mut entry = None;
        egui::ComboBox::from_id_salt("bundled")
            .selected_text(if current.is_empty() { "bundled…".to_string() } else { current })
            .width(180.0)
            .show_ui(ui, |ui| {
                let mut group = "";
                for e in &w.catalog {
                    if e.group != group {
                        group = e.group;
                        ui.weak(group);
                    }
                    let r = ui.selectable_label(false, e.name).on_hover_text(&e.description);
                    if r.clicked() {
                        entry = Some(e.clone());
                    }
                }
            })
            .response
            .on_hover_text("Bundled experiments (the list of `stormglass list`)");
        if let Some(e) = entry {
            w.open_entry(&e);
        }
        let l = ui.label("File:");
        let field = ui
            .add(
                egui::TextEdit::singleline(&mut w.path_text)
                    .desired_width(260.0)
                    .hint_text("path to a .ron experiment or scenario"),
            )
            .labelled_by(l.id);
        let enter = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if ui.button("Open").clicked() || enter {
            pick = Some(PathBuf::from(w.path_text.trim()));
        }
        if ui.button("Browse…").clicked() {
            w.browser.open = !w.browser.open;
        }
        if let Some(p) = pick {
            w.open_path(&p);
        }
        combo_and_seed(w, ui);
        ui.separator();
        let l = ui.label("Export to:");
        ui.add(egui::TextEdit::singleline(&mut w.export_path).desired_width(200.0))
            .labelled_by(l.id);
        if ui.button("Export session").clicked() {
            w.worker.send(Cmd::Export(PathBuf::from(w.export_path.trim())));
        }
    });
    save_export(w);
    if let Some(e) = &w.load_error {
        ui.colored_label(egui::Color32::from_rgb(220, 80, 60), format!("Cannot open: {e}"));
    }
    if let Some(d) = w.opened.as_ref().map(|o| o.exp.description.clone()) {
        ui.weak(d);
    }
    browser(w, ui);
}

/// Shows where the worker wrote the export.
fn save_export(w: &mut Workbench) {
    let Some(r) = w.store.exported.take() else { return };
    w.store.notices.push(match r {
        Ok(p) => format!("session exported to {}", p.display()),
        Err(e) => format!("export failed: {e}"),
    });
}

fn combo_and_seed(w: &mut Workbench, ui: &mut egui::Ui) {
    let Some(o) = &w.opened else { return };
    let combos = Selection::combos(&o.exp);
    let cur = combos.iter().find(|c| c.0 == o.sel.combo).map(|c| c.1.clone()).unwrap_or_default();
    let mut chosen: Option<usize> = None;
    egui::ComboBox::from_id_salt("combo")
        .selected_text(cur)
        .width(220.0)
        .show_ui(ui, |ui| {
            for (i, label) in &combos {
                if ui.selectable_label(*i == o.sel.combo, label).clicked() {
                    chosen = Some(*i);
                }
            }
        })
        .response
        .on_hover_text("Variant and sweep point");
    ui.label(format!("seed {}", w.store.seed));
    if let Some(i) = chosen {
        let mut sel = o.sel.clone();
        sel.combo = i;
        sel.overrides.clear();
        w.open_selection(sel);
    }
}

fn browser(w: &mut Workbench, ui: &mut egui::Ui) {
    if !w.browser.open {
        return;
    }
    let mut go: Option<PathBuf> = None;
    let mut open: Option<PathBuf> = None;
    egui::Frame::group(ui.style()).show(ui, |ui| {
        ui.horizontal(|ui| {
            ui.label(format!("Folder: {}", w.browser.dir.display()));
            if ui.button("Up").clicked() {
                go = w.browser.dir.parent().map(Path::to_path_buf);
            }
            if ui.button("Close").clicked() {
                w.browser.open = false;
            }
        });
        egui::ScrollArea::vertical().max_height(160.0).show(ui, |ui| {
            for (is_dir, p) in w.browser.entries() {
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
        w.browser.dir = d;
    }
    if let Some(p) = open {
        w.browser.open = false;
        w.open_path(&p);
    }
}
