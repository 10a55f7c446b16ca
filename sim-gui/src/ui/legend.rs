//! A plot's legend as a column beside it: one check box per line, in the line's colour
//! (unchecked: the line is hidden), names wrapped to the column's width and the column
//! scrolled when longer than the plot — never over the data, never clipped.

use egui::{Color32, RichText};
use std::collections::BTreeSet;

/// The legend of plot `plot` (its entries: name, colour), `height` high at most; `hidden`
/// holds the hidden lines as `plot/name`.
pub fn column(
    ui: &mut egui::Ui,
    plot: &str,
    entries: &[(String, Color32)],
    hidden: &mut BTreeSet<String>,
    height: f32,
) {
    ui.vertical(|ui| {
        ui.set_width(ui.available_width());
        egui::ScrollArea::vertical()
            .id_salt(("legend", plot))
            .max_height(height)
            .auto_shrink([false, true])
            .show(ui, |ui| {
                ui.spacing_mut().item_spacing.y = 1.0;
                for (name, color) in entries {
                    let key = format!("{plot}/{name}");
                    let mut on = !hidden.contains(&key);
                    let text = RichText::new(name.as_str()).color(*color).small();
                    if ui.checkbox(&mut on, text).changed() {
                        if on {
                            hidden.remove(&key);
                        } else {
                            hidden.insert(key);
                        }
                    }
                }
            });
    });
}
