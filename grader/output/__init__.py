"""The report and its forms: the result model and its text (report), the live stage line on a terminal (terminal),
Gradescope's results.json and its export's metadata (gradescope, gradescope_export), the per-student report files
(student_files) and the SVG writer of the class page's plots (svgplot)."""
