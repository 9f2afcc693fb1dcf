import './base.css';
import './colors.css';
